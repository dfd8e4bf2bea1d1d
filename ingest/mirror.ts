/**
 * Mirrors a table's cursor into consumer group `floe.<table>.<ingestId>` for lag tooling only:
 * the table is the source of truth, the group is never read back.
 */
import type { TableConfig } from '../config';
import type { Offsets } from '../table/cursor';
import type { Admin } from 'kafkajs';

/** In-flight cursor mirrors by consumer group (one per group at a time; awaited by Deps.close). */
const mirrorsInFlight = new Map<string, Promise<void>>();

/**
 * Mirrors the table's cursor into consumer group `floe.<table>.<ingestId>` for lag tooling only:
 * off the commit path (kafkajs' setOffsets joins the group, ~5 s), best effort, and skipped while
 * the previous mirror of the same group still runs (the next commit mirrors a newer cursor anyway).
 */
export function mirrorOffsets(admin: Admin, t: TableConfig, offsets: Offsets): void {
  const groupId = `floe.${t.table}.${t.ingestId}`;
  if (mirrorsInFlight.has(groupId)) return;
  const p = admin
    .setOffsets({
      groupId,
      topic: t.topic,
      partitions: Object.entries(offsets).map(([partition, offset]) => ({ partition: Number(partition), offset })),
    })
    .catch(() => undefined)
    .finally(() => mirrorsInFlight.delete(groupId));
  mirrorsInFlight.set(groupId, p);
}

/** Waits for every mirror in flight (a mirror holds a kafkajs consumer until it finishes). */
export async function awaitMirrors(): Promise<void> {
  await Promise.allSettled(mirrorsInFlight.values());
}
