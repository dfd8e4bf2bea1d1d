import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Connection } from '@temporalio/client';
import { join } from 'node:path';
import { stackEnv } from '../env';
import { stackPaths } from '../paths';
import { isRoot, pidRuns, readPid, removeFile, runCommand, spawnDaemon, stopProcessGroup, tcpOpen, waitFor } from '../proc';
import { markerMatches, StackError, writeMarker, type Health, type Service } from '../service';
import { DEBIAN } from '../versions';

// A TLS endpoint in front of the dev server, as Temporal Cloud or a self-hosted cluster behind
// mTLS is reached: Debian's nginx (the pinned .deb unpacked under $FLOE_HOME, no system install)
// terminating TLS on 127.0.0.1:7243 and passing gRPC to the dev server with grpc_pass. It requires
// a client certificate signed by a test CA the stack makes with openssl. Nothing of floe uses it by
// default; it is what the TLS connection tests (test/integration/temporal-tls.test.ts) and a user
// trying TEMPORAL_TLS_* locally connect to.

const TEMPORAL_TLS_PORT = 7243;

const p = () => stackPaths();
const nginxDir = () => join(p().home, 'nginx');
const pidFile = () => join(p().run, 'temporal-tls.pid');
const marker = () => join(nginxDir(), '.installed');
const nginxBin = () => process.env.FLOE_NGINX_BIN ?? join(nginxDir(), 'root', 'usr', 'sbin', 'nginx');

/** The endpoint and the test PKI: what a client sets as TEMPORAL_ADDRESS and TEMPORAL_TLS_*. */
export function temporalTlsEnv() {
  const dir = join(p().home, 'tls', 'temporal');
  return {
    address: `127.0.0.1:${TEMPORAL_TLS_PORT}`,
    /** The name on the server certificate (it also holds IP 127.0.0.1). */
    serverName: 'localhost',
    dir,
    caCert: join(dir, 'ca.pem'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client-key.pem'),
    serverCert: join(dir, 'server.pem'),
    serverKey: join(dir, 'server-key.pem'),
  };
}

/** TEMPORAL_* variables for the endpoint with server verification and a client certificate. */
export function temporalTlsProcessEnv(e = temporalTlsEnv()): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: e.address,
    TEMPORAL_TLS: 'true',
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: e.caCert,
    TEMPORAL_TLS_CLIENT_CERT_PATH: e.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: e.clientKey,
    TEMPORAL_TLS_SERVER_NAME: e.serverName,
  };
}

const openssl = (args: string[], cwd: string) => runCommand('openssl', args, { cwd, timeoutMs: 60_000 });

/**
 * A test CA, a server certificate for localhost / 127.0.0.1 and a client certificate, P-256 keys.
 * v3 extensions as rustls (the SDK's core) insists on: SAN on the leaf, CA:FALSE, key usages.
 */
async function makePki(dir: string): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl(
    [
      'req',
      '-x509',
      ...key,
      '-keyout',
      'ca-key.pem',
      '-out',
      'ca.pem',
      '-days',
      '3650',
      '-subj',
      '/CN=floe local stack test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  const leaf = async (name: string, cn: string, ext: string) => {
    writeFileSync(join(dir, `${name}.ext`), ext);
    await openssl(['req', ...key, '-keyout', `${name}-key.pem`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`], dir);
    await openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca-key.pem',
        '-CAcreateserial',
        '-days',
        '825',
        '-out',
        `${name}.pem`,
        '-extfile',
        `${name}.ext`,
      ],
      dir,
    );
    rmSync(join(dir, `${name}.csr`));
  };
  const common = 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n';
  await leaf('server', 'localhost', `${common}extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n`);
  await leaf('client', 'floe-worker', `${common}extendedKeyUsage=clientAuth\n`);
}

/** apt-get download of the pinned package, unpacked with dpkg-deb: no root, nothing installed system-wide. */
async function installNginx(log: (m: string) => void): Promise<void> {
  const dir = nginxDir();
  const debs = join(dir, 'debs');
  rmSync(join(dir, 'root'), { recursive: true, force: true });
  rmSync(debs, { recursive: true, force: true });
  mkdirSync(debs, { recursive: true });
  // The first pinned version an archive still serves (stack/versions.ts DEBIAN.nginx says why a list).
  let spec = '';
  let r: Awaited<ReturnType<typeof runCommand>> | undefined;
  let updated = false;
  for (const version of DEBIAN.nginx) {
    spec = `nginx=${version}`;
    log(`temporal-tls: apt-get download ${spec}`);
    const download = () => runCommand('apt-get', ['download', '-q', spec], { cwd: debs, timeoutMs: 10 * 60_000, allowFailure: true });
    r = await download();
    if (r.code !== 0 && isRoot() && !updated) {
      // A fresh machine has no package lists yet.
      await runCommand('apt-get', ['update', '-q'], { timeoutMs: 10 * 60_000 });
      updated = true;
      r = await download();
    }
    if (r.code === 0) break;
  }
  if (r!.code !== 0) {
    throw new StackError(
      'temporal-tls',
      `apt-get download nginx=${DEBIAN.nginx.join('|')}`,
      `${r!.stderr.trim() || r!.stdout.trim()}\n(the pins are stack/versions.ts DEBIAN.nginx; set FLOE_NGINX_BIN to use an nginx already installed)`,
    );
  }
  const deb = readdirSync(debs).find((f) => f.endsWith('.deb'));
  if (!deb) throw new StackError('temporal-tls', `apt-get download ${spec}`, `no .deb in ${debs}`);
  await runCommand('dpkg-deb', ['-x', join(debs, deb), join(dir, 'root')], { timeoutMs: 120_000 });
  rmSync(debs, { recursive: true, force: true });
}

function nginxConf(): string {
  const e = temporalTlsEnv();
  const dir = nginxDir();
  const upstream = stackEnv().temporal.address;
  const temp = (n: string) => join(dir, 'tmp', n);
  for (const n of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(temp(n), { recursive: true });
  return `# written by stack/services/temporal-tls.ts at every start
daemon off;
worker_processes 1;
${isRoot() ? 'user root root;\n' : ''}pid ${join(dir, 'nginx.pid')};
error_log stderr warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path ${temp('body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
  server {
    listen 127.0.0.1:${TEMPORAL_TLS_PORT} ssl http2;
    ssl_certificate ${e.serverCert};
    ssl_certificate_key ${e.serverKey};
    ssl_protocols TLSv1.2 TLSv1.3;
    # mTLS: a client must present a certificate the test CA signed.
    ssl_client_certificate ${e.caCert};
    ssl_verify_client on;
    client_max_body_size 0;
    location / {
      grpc_pass grpc://${upstream};
      # Temporal long-polls for tasks for up to ~70 s.
      grpc_read_timeout 300s;
      grpc_send_timeout 300s;
    }
  }
}
`;
}

export const temporalTls: Service = {
  name: 'temporal-tls',
  needs: [],
  get logFile() {
    return join(p().logs, 'temporal-tls.log');
  },
  endpoint: () => temporalTlsEnv().address,
  // Only the dev server behind it can be external; the proxy is always the stack's own.
  external: () => false,
  installed: () =>
    markerMatches(marker(), { nginx: DEBIAN.nginx.join('|') }) && existsSync(nginxBin()) && existsSync(temporalTlsEnv().clientKey),
  pid() {
    const pid = readPid(pidFile());
    return pidRuns(pid, 'temporal-tls.conf') ? pid : undefined;
  },

  async install(log = () => {}) {
    if (!process.env.FLOE_NGINX_BIN) await installNginx(log);
    await makePki(temporalTlsEnv().dir);
    writeMarker(marker(), { nginx: DEBIAN.nginx.join('|') });
  },

  async health(): Promise<Health> {
    const e = temporalTlsEnv();
    if (!(await tcpOpen('127.0.0.1', TEMPORAL_TLS_PORT))) return { ok: false, detail: `nothing listens on ${e.address}` };
    // Through the proxy with the test CA and client certificate, as a worker would.
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({
        address: e.address,
        connectTimeout: 3000,
        tls: {
          serverNameOverride: e.serverName,
          serverRootCACertificate: readFileSync(e.caCert),
          clientCertPair: { crt: readFileSync(e.clientCert), key: readFileSync(e.clientKey) },
        },
      });
      const ns = stackEnv().temporal.namespace;
      await connection.workflowService.describeNamespace({ namespace: ns });
      return { ok: true, detail: `mTLS gRPC proxy at ${e.address} reaches namespace ${ns} on ${stackEnv().temporal.address}` };
    } catch (err) {
      return { ok: false, detail: `${e.address} open but no namespace through it: ${(err as Error).message}` };
    } finally {
      await connection?.close().catch(() => undefined);
    }
  },

  async start() {
    if ((await this.health()).ok) return;
    if (this.pid() === undefined) {
      if (await tcpOpen('127.0.0.1', TEMPORAL_TLS_PORT)) {
        throw new StackError(
          'temporal-tls',
          `port ${TEMPORAL_TLS_PORT}`,
          'the port is taken by a process this stack did not start',
          this.logFile,
        );
      }
      const conf = join(nginxDir(), 'temporal-tls.conf');
      writeFileSync(conf, nginxConf());
      spawnDaemon({ cmd: nginxBin(), args: ['-p', nginxDir(), '-e', 'stderr', '-c', conf], logFile: this.logFile, pidFile: pidFile() });
    }
    // The dev server behind it may still be starting (services start together).
    const ready = await waitFor(async () => (await this.health()).ok, {
      timeoutMs: 120_000,
      abort: () => (this.pid() === undefined ? 'nginx exited' : undefined),
    });
    if (!ready.ok) throw new StackError('temporal-tls', `start on 127.0.0.1:${TEMPORAL_TLS_PORT}`, ready.reason, this.logFile);
  },

  async stop() {
    const pid = this.pid();
    if (pid !== undefined) await stopProcessGroup(pid, 10_000);
    removeFile(pidFile());
  },
};
