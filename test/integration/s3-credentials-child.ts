/**
 * Child process for s3-credentials.test.ts: with only the environment the test gives it, loads a
 * floe config, runs the worker's start-up credentials check, then writes, reads back and deletes
 * one file through the FileIO floe's tables use (openTables: SQL catalog + ResolvingFileIO ->
 * S3FileIO). Prints one JSON line: {ok, source, bytes} or {ok: false, error}.
 *   argv: <config path> <s3 location>
 */
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../config';
import { checkStorageCredentials, s3Options } from '../../table/storage';
import { openTables } from '../../table/tables';
import { S3FileIO } from '../../iceberg';

const [configPath, location] = process.argv.slice(2);

async function main(): Promise<void> {
  const cfg = loadConfig(configPath!);
  await checkStorageCredentials(cfg);
  const probe = new S3FileIO(s3Options(cfg.s3));
  const source = probe.credentialSource;
  probe.client.destroy();
  const tables = await openTables(cfg);
  try {
    const data = randomBytes(4096);
    await tables.io.write(location!, data);
    const back = await tables.io.read(location!);
    if (Buffer.compare(Buffer.from(back), data) !== 0) throw new Error('read back different bytes');
    const stat = await tables.io.stat(location!);
    await tables.io.delete(location!);
    console.log(JSON.stringify({ ok: true, source, bytes: stat.size, existsAfterDelete: await tables.io.exists(location!) }));
  } finally {
    await tables.close();
  }
}

main().catch((e: Error) => {
  console.log(JSON.stringify({ ok: false, error: `${e.name}: ${e.message}` }));
  process.exitCode = 1;
});
