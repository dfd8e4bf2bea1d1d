/**
 * Issue 29 item 8, against the real stack (SeaweedFS S3, SQLite catalog): expiry deletes only
 * metadata.json files the table's own metadata log names. Before, it listed `<location>/metadata/`
 * recursively and deleted every `*.metadata.json` whose version number was below its own oldest
 * kept one, so a nested table another engine created at `<location>/metadata` (named `….metadata`)
 * lost its metadata, and so did tables sharing `write.metadata.path`.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ensureStack } from '../../stack/stack';
import { openTables } from '../../table/tables';
import { METADATA_PREVIOUS_VERSIONS_MAX, Transaction, newTableMetadata, parseIdentifier } from '../../iceberg';
import { deleteExpiredFiles, expireSnapshotsCommit } from '../../maintenance/expire';
import { engineReads, maintenanceTestConfig, orderRows, seedSmallFiles } from './maintenance-oracles';

describe('expiry and metadata files that are not the table’s own (real stack)', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    await ensureStack(['s3']);
  });

  it('a nested table at <location>/metadata keeps every metadata file; the expired table drops only its own', async () => {
    const { table, cfg } = maintenanceTestConfig(`it_expire_nested_${Date.now().toString(36)}`);
    await seedSmallFiles(cfg, table, 2, 10);
    const tables = await openTables(cfg);
    try {
      // The outer table keeps one previous version in its log, so its own old versions fall off
      // and the cut-off version is above the nested table's low version numbers.
      const tx = new Transaction(parseIdentifier(table));
      tx.setProperties({ [METADATA_PREVIOUS_VERSIONS_MAX]: '1' });
      await tx.commit(tables.catalog, tables.io);
      const outer = await tables.load(table);

      // Another engine's table `<table>.metadata`, placed at <outer location>/metadata.
      const nestedName = `${table}.metadata`;
      const nestedId = parseIdentifier(nestedName);
      await tables.catalog.createNamespace(nestedId.namespace).catch(() => undefined);
      const nestedMetadata = newTableMetadata({
        location: `${outer.metadata.location}/metadata`,
        schema: outer.metadata.schemas.find((s) => s['schema-id'] === outer.metadata['current-schema-id'])!,
        properties: {},
        tableUuid: randomUUID(),
      });
      await tables.catalog.createTable(nestedId, nestedMetadata);
      for (let c = 0; c < 2; c++) {
        const files = await tables.writeDataFiles(nestedName, orderRows(500 + c * 5, 5), `nested-${c}`, 1 << 30);
        await tables.appendOnce(nestedName, { files, summary: { 'floe.commit-id': `nested-${c}` }, validate: () => undefined });
      }
      const nested = await tables.load(nestedName);
      const nestedFiles = [nested.metadataLocation, ...nested.metadata['metadata-log'].map((e) => e['metadata-file'])];
      assert.ok(nestedFiles.length >= 3, `the nested table has several metadata versions: ${nestedFiles.length}`);

      // Two more commits on the outer table, then expire everything but the newest snapshot.
      for (let c = 0; c < 2; c++) {
        const files = await tables.writeDataFiles(table, orderRows(1000 + c * 5, 5), `later-${c}`, 1 << 30);
        await tables.appendOnce(table, { files, summary: { 'floe.commit-id': `later-${table}-${c}` }, validate: () => undefined });
      }
      const asOfMs = Date.now() + 60_000;
      const e = await expireSnapshotsCommit(tables, { table, expireId: randomUUID(), asOfMs, olderThanMs: 0, retainLast: 1 });
      assert.ok(e.beforeMetadataLocation && e.afterMetadataLocation, 'something expired');
      await deleteExpiredFiles(tables, {
        table,
        beforeMetadataLocation: e.beforeMetadataLocation,
        afterMetadataLocation: e.afterMetadataLocation,
        metadataOlderThanMs: asOfMs,
      });

      for (const f of nestedFiles) assert.ok(await tables.io.exists(f), `the nested table's ${f} still exists`);
      const reread = await tables.load(nestedName);
      assert.equal(reread.metadataLocation, nested.metadataLocation);
      // Another engine reads the nested table whole, and the outer one too.
      assert.equal((await engineReads(reread.metadataLocation)).pyiceberg.rows, 10);
      assert.equal((await engineReads((await tables.load(table)).metadataLocation)).pyiceberg.rows, 30);
    } finally {
      await tables.close();
    }
  });
});
