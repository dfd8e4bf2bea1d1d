/**
 * The Schema Registry's install without the network: the Maven Central paths derived from the pin,
 * the SHA-1 check against Central's .sha1, and the install marker that makes a changed pin reinstall.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apicurioArtifact, verifySha1 } from '../../stack/services/schema-registry';
import { markerMatches, writeMarker } from '../../stack/service';
import { SCHEMA_REGISTRY } from '../../stack/versions';

describe('schema-registry install', () => {
  const dir = mkdtempSync(join(tmpdir(), 'floe-schema-registry-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('resolves the pinned app zip by its Maven coordinates and runs the runner jar inside it', () => {
    assert.deepEqual(apicurioArtifact('2.6.13.Final'), {
      coordinates: 'io.apicurio:apicurio-registry-app:2.6.13.Final:zip:all',
      repositoryPath: 'io/apicurio/apicurio-registry-app/2.6.13.Final/apicurio-registry-app-2.6.13.Final-all.zip',
      runnerJar: 'apicurio-registry-app-2.6.13.Final-runner.jar',
    });
    assert.match(SCHEMA_REGISTRY['apicurio-registry'], /^2\.6\.\d+\.Final$/, 'a 2.6 release: the one-zip app with in-memory storage');
  });

  it("accepts a file whose SHA-1 is the .sha1's, and names both digests otherwise", async () => {
    const file = join(dir, 'app.zip');
    writeFileSync(file, 'registry bytes');
    const digest = createHash('sha1').update('registry bytes').digest('hex');
    writeFileSync(`${file}.sha1`, `${digest}\n`);
    await verifySha1(file, `${file}.sha1`);
    writeFileSync(`${file}.sha1`, `${digest.toUpperCase()}  app.zip\n`); // the "<digest>  <name>" form
    await verifySha1(file, `${file}.sha1`);

    writeFileSync(file, 'tampered bytes');
    await assert.rejects(verifySha1(file, `${file}.sha1`), (e: Error) => {
      assert.match(e.message, new RegExp(`SHA-1 of .*app\\.zip is [0-9a-f]{40}, Maven Central's .*app\\.zip\\.sha1 says ${digest}`));
      return true;
    });
    await assert.rejects(verifySha1(file, join(dir, 'missing.sha1')), /no checksum beside .*app\.zip/);
  });

  it('a marker written with the pins matches them; another version does not (the install runs again)', () => {
    const marker = join(dir, '.floe-installed.json');
    assert.equal(markerMatches(marker, SCHEMA_REGISTRY), false, 'no marker: not installed');
    writeMarker(marker, SCHEMA_REGISTRY);
    assert.equal(markerMatches(marker, SCHEMA_REGISTRY), true);
    assert.equal(markerMatches(marker, { 'apicurio-registry': '2.6.12.Final' }), false);
  });
});
