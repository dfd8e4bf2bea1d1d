/**
 * Child process for catalog-sqlite-processes.test.ts: appends `count` snapshots to one table of a
 * SQLite catalog, reloading and retrying on CommitConflict like a real writer. Once loaded and
 * warmed up (the table read once) it writes `<go file>.ready-<worker id>`, then waits for the `go`
 * file, so both children start committing at the same moment however long each took to start.
 * Prints a JSON summary.
 *   argv: <db path> <warehouse> <worker id> <count> <go file>
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { SqlCatalog, SqliteDialect, isIcebergError, LocalFileIO } from '../../iceberg';

const [dbPath, warehouse, worker, countArg, goFile] = process.argv.slice(2);

async function main(): Promise<void> {
  const cat = new SqlCatalog({ name: 'floe', dialect: new SqliteDialect({ path: dbPath! }), io: new LocalFileIO(), warehouse: warehouse! });
  const id = { namespace: ['db'], name: 'shared' };
  await cat.loadTable(id);
  writeFileSync(`${goFile!}.ready-${worker!}`, '');
  while (!existsSync(goFile!)) await sleep(5);
  let conflicts = 0;
  const committed: string[] = [];
  for (let i = 0; i < Number(countArg); i++) {
    // 63-bit random ids, as Java/PyIceberg pick them: above 2^53 most of the time.
    const snapshotId = randomBytes(8).readBigUInt64BE() >> 1n;
    for (;;) {
      const cur = await cat.loadTable(id);
      const parent = cur.metadata['current-snapshot-id'] ?? null;
      try {
        await cat.commitTable(
          id,
          [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent }],
          [
            {
              action: 'add-snapshot',
              snapshot: {
                'snapshot-id': snapshotId,
                ...(parent === null ? {} : { 'parent-snapshot-id': parent }),
                'sequence-number': cur.metadata['last-sequence-number'] + 1n,
                'timestamp-ms': BigInt(Date.now()),
                'manifest-list': `${cur.metadata.location}/metadata/snap-${snapshotId}.avro`,
                summary: { operation: 'append', 'floe.worker': worker!, 'floe.seq': String(i) },
              },
            },
            { action: 'set-snapshot-ref', 'ref-name': 'main', 'snapshot-id': snapshotId, type: 'branch' },
          ],
        );
        committed.push(snapshotId.toString());
        break;
      } catch (e) {
        if (!isIcebergError(e, 'CommitConflict')) throw e;
        conflicts++;
      }
    }
  }
  await cat.close();
  process.stdout.write(`${JSON.stringify({ worker, committed, conflicts })}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
