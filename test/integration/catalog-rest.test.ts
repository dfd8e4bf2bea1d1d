/**
 * RestCatalog against SeaweedFS's Iceberg REST catalog (served by `weed mini` on :8181 beside
 * S3). SeaweedFS serves one catalog per S3 *table bucket*, selected by `warehouse`; the test
 * creates its table bucket through the S3 Tables API first. Auth is the protocol's OAuth2
 * client-credentials flow with the S3 access key as client id.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import {
  catalogFromConfig,
  RestCatalog,
  isIcebergError,
  newTableMetadata,
  parseTableMetadata,
  type Catalog,
  type FileIO,
  type Snapshot,
  type TableMetadata,
} from '../../iceberg';
import { ensureStack } from '../../stack';
import type { StackEnv } from '../../stack';

const TABLE_BUCKET = 'floe-rest-test';
let env: StackEnv;
let catalog: Catalog;
let io: FileIO;
const ns = [`it_${randomUUID().slice(0, 8).replace(/-/g, '')}`];

/** One SigV4-signed S3 Tables call (service `s3tables`); enough for CreateTableBucket. */
async function s3Tables(target: string, body: object): Promise<{ status: number; text: string }> {
  const { endpoint, region, accessKeyId, secretAccessKey } = env.s3;
  const url = new URL(endpoint);
  const payload = JSON.stringify(body);
  const amzDate = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  const hmac = (k: Buffer | string, s: string) => createHmac('sha256', k).update(s).digest();
  const headers: Record<string, string> = {
    host: url.host,
    'x-amz-content-sha256': sha(payload),
    'x-amz-date': amzDate,
    'x-amz-target': `S3Tables.${target}`,
  };
  const signed = Object.keys(headers).sort();
  const canonical = ['POST', '/', '', ...signed.map((h) => `${h}:${headers[h]}`), '', signed.join(';'), sha(payload)].join('\n');
  const scope = `${day}/${region}/s3tables/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), 's3tables'), 'aws4_request');
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  const res = await fetch(`${endpoint}/`, {
    method: 'POST',
    body: payload,
    headers: {
      ...headers,
      'content-type': 'application/x-amz-json-1.1',
      authorization: `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${signature}`,
    },
  });
  return { status: res.status, text: await res.text() };
}

before(async () => {
  env = await ensureStack(['s3']);
  const created = await s3Tables('CreateTableBucket', { name: TABLE_BUCKET });
  if (created.status !== 200 && !/exist/i.test(created.text)) {
    throw new Error(`CreateTableBucket ${TABLE_BUCKET}: expected 200 or "already exists", found HTTP ${created.status}: ${created.text}`);
  }
  ({ catalog, io } = await catalogFromConfig({
    type: 'rest',
    uri: env.icebergRest.uri,
    warehouse: `s3://${TABLE_BUCKET}/`,
    credential: `${env.s3.accessKeyId}:${env.s3.secretAccessKey}`,
    s3: {
      endpoint: env.s3.endpoint,
      region: env.s3.region,
      forcePathStyle: true,
      accessKeyId: env.s3.accessKeyId,
      secretAccessKey: env.s3.secretAccessKey,
    },
  }));
});
after(async () => {
  if (!catalog) return;
  for (const t of await catalog.listTables(ns).catch(() => [])) await catalog.dropTable(t, { purge: true }).catch(() => undefined);
  await catalog.dropNamespace(ns).catch(() => undefined);
  await catalog.close();
});

const schema = {
  type: 'struct' as const,
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' as const },
    { id: 2, name: 'ts', required: false, type: 'timestamptz' as const },
  ],
};
const snap = (id: bigint, parent: bigint | null, m: TableMetadata): Snapshot => ({
  'snapshot-id': id,
  ...(parent === null ? {} : { 'parent-snapshot-id': parent }),
  'sequence-number': m['last-sequence-number'] + 1n,
  'timestamp-ms': BigInt(Date.now()),
  'manifest-list': `${m.location}/metadata/snap-${id}.avro`,
  summary: { operation: 'append', 'floe.commit-id': String(id) },
});
const append = (c: Catalog, id: { namespace: string[]; name: string }, s: Snapshot, parent: bigint | null) =>
  c.commitTable(
    id,
    [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent }],
    [
      { action: 'add-snapshot', snapshot: s },
      { action: 'set-snapshot-ref', 'ref-name': 'main', 'snapshot-id': s['snapshot-id'], type: 'branch' },
    ],
  );

void test('bad client credentials fail at connect with the OAuth2 error', async () => {
  const bad = new RestCatalog({ uri: env.icebergRest.uri, warehouse: `s3://${TABLE_BUCKET}/`, credential: 'floe:wrong' });
  await assert.rejects(bad.listNamespaces(), (e: unknown) => isIcebergError(e, 'Io') && /HTTP 401/.test(e.message));
});

void test('namespaces: create, exists, list, duplicate is AlreadyExists', async () => {
  await catalog.createNamespace(ns, { owner: 'floe' });
  assert.equal(await catalog.namespaceExists(ns), true);
  assert.equal(await catalog.namespaceExists(['no_such_ns_x']), false);
  assert.ok((await catalog.listNamespaces()).some((n) => n.join('.') === ns[0]));
  await assert.rejects(catalog.createNamespace(ns), (e: unknown) => isIcebergError(e, 'AlreadyExists'));
});

void test('create, load, commit with 64-bit ids, 409 => CommitConflict; metadata file readable through S3FileIO', async () => {
  const id = { namespace: ns, name: 'events' };
  const created = await catalog.createTable(id, newTableMetadata({ location: '', schema, tableUuid: randomUUID() }));
  assert.equal(created.metadata['current-snapshot-id'], null);
  assert.deepEqual(await catalog.listTables(ns), [id]);
  assert.equal(await catalog.tableExists(id), true);
  const big = 9223372036854775807n;
  const t1 = await append(catalog, id, snap(big, null, created.metadata), null);
  assert.equal(t1.metadata['current-snapshot-id'], big);
  assert.notEqual(t1.metadataLocation, created.metadataLocation);
  const loaded = await catalog.loadTable(id);
  assert.equal(loaded.metadataLocation, t1.metadataLocation);
  assert.equal(loaded.metadata.snapshots[0]!['snapshot-id'], big);
  // The metadata file the server wrote parses to the same metadata through our S3FileIO.
  const onDisk = parseTableMetadata(new TextDecoder().decode(await io.read(loaded.metadataLocation)));
  assert.equal(onDisk['current-snapshot-id'], big);
  assert.equal(onDisk['table-uuid'], loaded.metadata['table-uuid']);
  // Stale requirement: the server answers 409.
  await assert.rejects(
    append(catalog, id, snap(5n, null, created.metadata), null),
    (e: unknown) => isIcebergError(e, 'CommitConflict') && e.retryable,
  );
  await assert.rejects(catalog.loadTable({ namespace: ns, name: 'missing' }), (e: unknown) => isIcebergError(e, 'NotFound'));
});

void test('two REST clients commit concurrently; all commits land after reload-and-retry', async () => {
  const id = { namespace: ns, name: 'race' };
  await catalog.createTable(id, newTableMetadata({ location: '', schema, tableUuid: randomUUID() }));
  const clients = [
    catalog,
    (
      await catalogFromConfig({
        type: 'rest',
        uri: env.icebergRest.uri,
        warehouse: `s3://${TABLE_BUCKET}/`,
        credential: `${env.s3.accessKeyId}:${env.s3.secretAccessKey}`,
      })
    ).catalog,
  ];
  let nextId = 100n;
  let conflicts = 0;
  const commitOne = async (c: Catalog): Promise<void> => {
    for (let attempt = 0; attempt < 30; attempt++) {
      const cur = await c.loadTable(id);
      const parent = cur.metadata['current-snapshot-id'] ?? null;
      try {
        await append(c, id, snap(nextId++, parent, cur.metadata), parent);
        return;
      } catch (e) {
        if (!isIcebergError(e, 'CommitConflict')) throw e;
        conflicts++;
      }
    }
    throw new Error('no commit after 30 attempts');
  };
  await Promise.all(Array.from({ length: 6 }, (_, i) => commitOne(clients[i % 2]!)));
  const final = await catalog.loadTable(id);
  assert.equal(final.metadata.snapshots.length, 6);
  assert.equal(final.metadata['last-sequence-number'], 6n);
  assert.ok(conflicts > 0, 'the clients raced');
  await clients[1]!.close();
});

void test('drop table with purge, then the namespace', async () => {
  for (const t of await catalog.listTables(ns)) await catalog.dropTable(t, { purge: true });
  assert.deepEqual(await catalog.listTables(ns), []);
  await catalog.dropNamespace(ns);
  assert.equal(await catalog.namespaceExists(ns), false);
});
