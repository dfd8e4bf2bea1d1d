/**
 * Object storage through the AWS SDK's default credential chain, against the stack's SeaweedFS:
 * each case runs a child process with only the environment it names (a temporary HOME, no
 * FLOE_S3_* keys, IMDS disabled so nothing waits on 169.254.169.254), and a config whose `s3`
 * section has an endpoint but no keys, so the local stack's keys cannot apply.
 *   - keys only in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY reach SeaweedFS (write, read, delete);
 *   - keys only in a shared credentials file, chosen by AWS_PROFILE (and by `s3.profile`), too;
 *   - wrong keys in the environment are refused by SeaweedFS (the chain's keys are the ones used);
 *   - a real worker with no credentials anywhere exits at start, naming every source tried.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { ensureStack } from '../../stack/stack';
import { floeHome } from '../../stack/paths';
import type { StackEnv } from '../../stack/env';

const REPO = resolve(__dirname, '../..');
const CHILD = join(__dirname, 's3-credentials-child.ts');

let env: StackEnv;
let root: string;
let home: string;

before(async () => {
  env = await ensureStack(['temporal', 's3']);
  root = mkdtempSync(join(tmpdir(), 'floe-s3-creds-'));
  home = join(root, 'home');
  mkdirSync(home);
});
after(() => rmSync(root, { recursive: true, force: true }));

/** Only what a process needs to run, plus `extra`: no AWS_*, FLOE_S3_*, TEMPORAL_* of the runner. */
function cleanEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    FLOE_HOME: floeHome(),
    AWS_EC2_METADATA_DISABLED: 'true',
    ...extra,
  };
}

function writeConfig(name: string, s3: Record<string, unknown>): string {
  const path = join(root, `${name}.yaml`);
  writeFileSync(
    path,
    JSON.stringify({
      catalog: { type: 'sql', uri: `sqlite:///${join(root, `${name}.db`)}`, warehouse: `s3://${env.s3.bucket}/test/s3-creds` },
      s3: { endpoint: env.s3.endpoint, region: env.s3.region, ...s3 },
    }),
  );
  return path;
}

function run(args: string[], childEnv: Record<string, string>, timeoutMs: number) {
  return new Promise<{ code: number | null; stdout: string; stderr: string; ms: number }>((res) => {
    const t0 = Date.now();
    const p = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: REPO, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '',
      stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

async function roundTrip(config: string, childEnv: Record<string, string>) {
  const location = `s3://${env.s3.bucket}/test/s3-creds/${randomUUID()}.bin`;
  const r = await run([CHILD, config, location], childEnv, 120_000);
  const line = r.stdout.trim().split('\n').pop() ?? '';
  let out: { ok: boolean; source?: string; bytes?: number; existsAfterDelete?: boolean; error?: string };
  try {
    out = JSON.parse(line) as typeof out;
  } catch {
    throw new Error(`child printed no result (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
  return out;
}

describe('S3 credentials from the AWS default chain (real SeaweedFS)', { timeout: 5 * 60_000 }, () => {
  it('keys only in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY reach SeaweedFS through the FileIO', async () => {
    const out = await roundTrip(
      writeConfig('env-keys', {}),
      cleanEnv({ AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey }),
    );
    assert.deepEqual(out, { ok: true, source: 'chain', bytes: 4096, existsAfterDelete: false });
  });

  it('keys only in a shared credentials file, chosen by AWS_PROFILE or by s3.profile', async () => {
    const creds = join(root, 'aws-credentials');
    const awsConfig = join(root, 'aws-config');
    writeFileSync(
      creds,
      `[default]\naws_access_key_id = not-this-one\naws_secret_access_key = nope\n\n[floe-test]\naws_access_key_id = ${env.s3.accessKeyId}\naws_secret_access_key = ${env.s3.secretAccessKey}\n`,
    );
    writeFileSync(awsConfig, `[profile floe-test]\nregion = ${env.s3.region}\n`);
    const files = { AWS_SHARED_CREDENTIALS_FILE: creds, AWS_CONFIG_FILE: awsConfig };
    const byEnv = await roundTrip(writeConfig('profile-env', {}), cleanEnv({ ...files, AWS_PROFILE: 'floe-test' }));
    assert.deepEqual(byEnv, { ok: true, source: 'chain', bytes: 4096, existsAfterDelete: false });
    const byKey = await roundTrip(writeConfig('profile-key', { profile: 'floe-test' }), cleanEnv(files));
    assert.deepEqual(byKey, { ok: true, source: 'chain', bytes: 4096, existsAfterDelete: false });
    // The same file under ~/.aws, found through HOME alone.
    mkdirSync(join(home, '.aws'), { recursive: true });
    writeFileSync(
      join(home, '.aws', 'credentials'),
      `[floe-test]\naws_access_key_id = ${env.s3.accessKeyId}\naws_secret_access_key = ${env.s3.secretAccessKey}\n`,
    );
    try {
      const byHome = await roundTrip(writeConfig('profile-home', {}), cleanEnv({ AWS_PROFILE: 'floe-test' }));
      assert.deepEqual(byHome, { ok: true, source: 'chain', bytes: 4096, existsAfterDelete: false });
    } finally {
      rmSync(join(home, '.aws'), { recursive: true, force: true });
    }
  });

  it('wrong keys in the environment are what the FileIO sends: SeaweedFS refuses them', async () => {
    const out = await roundTrip(
      writeConfig('env-wrong', {}),
      cleanEnv({ AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: 'not-the-secret' }),
    );
    assert.equal(out.ok, false);
    assert.match(out.error!, /write s3:\/\/.* failed: .*\(HTTP 403\)/);
    assert.ok(!out.error!.includes('not-the-secret'), 'the secret is not in the error');
  });

  it('a worker with no credentials anywhere fails at start, naming every source the chain tried', async () => {
    const config = writeConfig('no-creds', {});
    const r = await run([join(REPO, 'cli/main.ts'), '-c', config, 'worker'], cleanEnv({}), 120_000);
    assert.notEqual(r.code, 0, 'the worker exits');
    assert.equal(r.code, 1);
    const out = r.stdout + r.stderr;
    assert.match(
      out,
      /no credentials for S3 at http:\/\/127\.0\.0\.1:8333: the AWS default credential chain found none\. Tried, in order:/,
    );
    for (const source of [
      /environment \(AWS_ACCESS_KEY_ID \+ AWS_SECRET_ACCESS_KEY\): Unable to find environment variable credentials/,
      /shared config\/credentials files \(~\/\.aws\/config, ~\/\.aws\/credentials\): Could not resolve credentials using profile: \[default\]/,
      /credential_process/,
      /web identity token \(AWS_WEB_IDENTITY_TOKEN_FILE \+ AWS_ROLE_ARN, e\.g\. EKS IRSA\)/,
      /container metadata \(AWS_CONTAINER_CREDENTIALS_\*\) \/ EC2 instance metadata \(IMDS\): EC2 Instance Metadata Service access disabled/,
    ])
      assert.match(out, source);
    assert.doesNotMatch(out, /polling task queue/, 'it never started polling');
  });

  it('the same for a SigV4 REST catalog that places tables itself (Glue, S3 Tables): no location base, still checked', async () => {
    // examples/production.yaml's catalog: warehouse is an account id, not a URI. The check comes
    // before any connection, so the unreachable catalog address is never dialled.
    const path = join(root, 'glue-no-creds.yaml');
    writeFileSync(
      path,
      JSON.stringify({
        catalog: {
          type: 'rest',
          uri: 'http://127.0.0.1:9/iceberg',
          warehouse: '123456789012',
          properties: { 'rest.sigv4-enabled': 'true', 'rest.signing-name': 'glue', 'rest.signing-region': 'eu-west-1' },
        },
        s3: { region: 'eu-west-1' },
      }),
    );
    const r = await run([join(REPO, 'cli/main.ts'), '-c', path, 'worker'], cleanEnv({}), 120_000);
    assert.equal(r.code, 1, `exit 1:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout + r.stderr, /no credentials for AWS S3: the AWS default credential chain found none\. Tried, in order:/);
    assert.doesNotMatch(r.stdout + r.stderr, /polling task queue/);
  });
});
