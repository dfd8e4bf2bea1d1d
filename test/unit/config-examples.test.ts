/**
 * Every config in examples/ loads, so the README's production example names only real keys; and
 * a REST catalog's warehouse may be a name (Polaris, Glue) while a SQL catalog's stays a location.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { loadConfig, tableLocationBase } from '../../config';

const examples = resolve(__dirname, '../../examples');
const dir = mkdtempSync(join(tmpdir(), 'floe-examples-'));
const withCatalog = (file: string, catalog: Record<string, unknown>) => {
  const doc = parseYaml(readFileSync(join(examples, file), 'utf8')) as Record<string, unknown>;
  doc['catalog'] = catalog;
  const path = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, stringifyYaml(doc));
  return loadConfig(path);
};

void test('every example config loads', () => {
  const files = readdirSync(examples).filter((f) => /\.ya?ml$/.test(f));
  assert.ok(files.includes('production.yaml'));
  for (const f of files) assert.doesNotThrow(() => loadConfig(join(examples, f)), f);
});

void test('the production example: MSK IAM over TLS, AWS S3 by the default chain, Glue REST with SigV4, no secret written', () => {
  const cfg = loadConfig(join(examples, 'production.yaml'));
  assert.equal(cfg.kafka.sasl?.mechanism, 'aws');
  assert.ok(cfg.kafka.ssl);
  assert.deepEqual(cfg.s3.credentials, { source: 'chain' });
  assert.equal(cfg.s3.endpoint, undefined, 'AWS S3 itself');
  assert.equal(cfg.catalog.type, 'rest');
  assert.equal(cfg.catalog.properties?.['rest.sigv4-enabled'], 'true');
  assert.equal(cfg.catalog.properties?.['rest.signing-name'], 'glue');
  assert.equal(tableLocationBase(cfg.catalog), undefined, 'Glue places new tables itself');
  assert.equal(cfg.temporal.address, undefined, 'Temporal Cloud comes from TEMPORAL_* / the CLI profile');
  assert.doesNotMatch(readFileSync(join(examples, 'production.yaml'), 'utf8'), /password:|secretAccessKey:|credential:|apiKey:/);
});

void test('the Polaris variant of the example: OAuth2 credential by reference, the warehouse a catalog name', () => {
  const cfg = withCatalog('production.yaml', {
    type: 'rest',
    uri: 'https://polaris.acme.internal/api/catalog',
    warehouse: 'lake',
    credentialEnv: 'POLARIS_CREDENTIAL',
    properties: { scope: 'PRINCIPAL_ROLE:ALL' },
  });
  assert.equal(cfg.catalog.warehouse, 'lake');
  assert.deepEqual(cfg.catalog.credential, { env: 'POLARIS_CREDENTIAL' });
});

void test('catalog.location: the base of new tables when the warehouse is not one; a SQL warehouse must be a location', () => {
  const rest = withCatalog('orders.yaml', { type: 'rest', uri: 'http://127.0.0.1:8181', warehouse: 'lake', location: 's3://acme/lake/' });
  assert.equal(tableLocationBase(rest.catalog), 's3://acme/lake');
  const uriWarehouse = withCatalog('orders.yaml', { type: 'rest', uri: 'http://127.0.0.1:8181', warehouse: 's3://acme/wh' });
  assert.equal(tableLocationBase(uriWarehouse.catalog), 's3://acme/wh');
  assert.throws(() => withCatalog('orders.yaml', { type: 'sql', warehouse: 'lake' }), /catalog\.warehouse: expected a URI/);
  assert.throws(
    () => withCatalog('orders.yaml', { type: 'rest', uri: 'http://127.0.0.1:8181', warehouse: 'lake', location: 'lake' }),
    /catalog\.location: expected a URI/,
  );
});

void test("README's production example is examples/production.yaml, verbatim", () => {
  const readme = readFileSync(resolve(__dirname, '../../README.md'), 'utf8');
  assert.ok(readme.includes('```yaml\n' + readFileSync(join(examples, 'production.yaml'), 'utf8') + '```'));
});
