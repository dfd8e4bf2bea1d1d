/**
 * The local broker's secured listeners: a test CA, the broker's and a client's certificate (PEM,
 * made with openssl on first start), a random password per test user (files under
 * $FLOE_HOME/kafka/secrets, mode 0600), and the server.properties lines for a SASL_SSL listener
 * (PLAIN users in its JAAS config, SCRAM-SHA-256/512 users in the KRaft metadata, OAUTHBEARER with
 * Kafka's unsecured-JWT validator, which is what a token-provider hook can be tested against here)
 * and an SSL listener that requires a client certificate. The PLAINTEXT listener stays as it was.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PORTS, stackEnv, type KafkaSecureEnv } from '../env';
import { stackPaths } from '../paths';
import { runCommand } from '../proc';

const sec = (): KafkaSecureEnv => stackEnv().kafka.secure;
const tlsDir = () => join(stackPaths().kafka, 'tls');
const keystoreFile = () => join(tlsDir(), 'broker-keystore.pem');
const scramMarker = () => join(stackPaths().kafka, 'scram-users.sha256');

/** The SCRAM users and the mechanism each one is created for. */
const scramUsers = () => [
  { mechanism: 'SCRAM-SHA-256', ...sec().users.scram256 },
  { mechanism: 'SCRAM-SHA-512', ...sec().users.scram512 },
];

const password = (file: string) => readFileSync(file, 'utf8').trim();

async function openssl(args: string[], cwd: string): Promise<void> {
  await runCommand('openssl', args, { cwd, timeoutMs: 60_000 });
}

/**
 * A CA, a broker certificate for 127.0.0.1/localhost and a client certificate, all signed by the
 * CA; made once (a directory swap, so a half-made set is never used). Keys are unencrypted PKCS#8,
 * which Kafka's PEM keystore reads without `ssl.key.password`.
 */
export async function ensureKafkaTls(): Promise<void> {
  const dir = tlsDir();
  if (existsSync(keystoreFile()) && existsSync(sec().clientKeyFile)) return;
  const tmp = `${dir}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true, mode: 0o700 });
  const days = '3650';
  await openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'ca.key'], tmp);
  await openssl(
    ['req', '-x509', '-new', '-key', 'ca.key', '-days', days, '-subj', '/CN=floe local stack test CA', '-out', 'ca.pem'].concat([
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]),
    tmp,
  );
  const leaf = async (name: string, cn: string, ext: string) => {
    await openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', `${name}.key`], tmp);
    await openssl(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`], tmp);
    writeFileSync(join(tmp, `${name}.ext`), ext);
    await openssl(
      ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', days].concat([
        '-extfile',
        `${name}.ext`,
        '-out',
        `${name}.pem`,
      ]),
      tmp,
    );
  };
  await leaf('broker', 'localhost', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  await leaf('client', 'floe-test-client', 'extendedKeyUsage=clientAuth\n');
  // Kafka's PEM keystore: the private key and the certificate chain in one file.
  writeFileSync(
    join(tmp, 'broker-keystore.pem'),
    readFileSync(join(tmp, 'broker.key'), 'utf8') + readFileSync(join(tmp, 'broker.pem'), 'utf8'),
  );
  for (const f of ['ca.key', 'broker.key', 'client.key', 'broker-keystore.pem']) chmodSync(join(tmp, f), 0o600);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
}

/** A random password per test user, made once (hex: safe inside JAAS quotes and SCRAM arguments). */
export function ensureKafkaPasswords(): void {
  for (const u of Object.values(sec().users)) {
    if (existsSync(u.passwordFile)) continue;
    mkdirSync(join(u.passwordFile, '..'), { recursive: true, mode: 0o700 });
    writeFileSync(u.passwordFile, `${randomBytes(18).toString('hex')}\n`, { mode: 0o600 });
  }
}

/** server.properties lines of the secured listeners (the caller adds them to its listener lists). */
export function securityProperties(): string[] {
  const s = sec();
  const jaas = (module: string, options = '') => `org.apache.kafka.common.security.${module} required${options};`;
  return [
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${keystoreFile()}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${s.caFile}`,
    'listener.name.ssl.ssl.client.auth=required',
    'listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER',
    `listener.name.sasl_ssl.plain.sasl.jaas.config=${jaas('plain.PlainLoginModule', ` user_${s.users.plain.username}="${password(s.users.plain.passwordFile)}"`)}`,
    `listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=${jaas('scram.ScramLoginModule')}`,
    `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=${jaas('scram.ScramLoginModule')}`,
    // No server callback handler: Kafka validates OAUTHBEARER tokens as unsecured JWTs (alg none).
    `listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=${jaas('oauthbearer.OAuthBearerLoginModule', ' unsecuredLoginStringClaim_sub="floe-broker"')}`,
  ];
}

export const secureListeners = (): string[] => [`SASL_SSL://127.0.0.1:${PORTS.kafkaSaslSsl}`, `SSL://127.0.0.1:${PORTS.kafkaMtls}`];

/** What the SCRAM users were created with (a changed password file makes them be created again). */
function scramFingerprint(): string {
  const h = createHash('sha256');
  for (const u of scramUsers()) h.update(`${u.mechanism}\0${u.username}\0${password(u.passwordFile)}\n`);
  return h.digest('hex');
}

/** `kafka-storage format` arguments that create the SCRAM users with the metadata log. */
export function scramFormatArgs(): string[] {
  return scramUsers().flatMap((u) => ['--add-scram', `${u.mechanism}=[name=${u.username},password=${password(u.passwordFile)}]`]);
}

/** Records that the SCRAM users exist with the current passwords (after a format with scramFormatArgs). */
export function markScramUsers(): void {
  writeFileSync(scramMarker(), scramFingerprint());
}

export const scramUsersCurrent = (): boolean => existsSync(scramMarker()) && readFileSync(scramMarker(), 'utf8') === scramFingerprint();

/**
 * Creates (or updates) the SCRAM users on a running broker through its PLAINTEXT listener, for a
 * log dir formatted before the users existed. `run` runs a Kafka tool's main class. A failure
 * says which user, never the password (the command line holds it).
 */
export async function createScramUsers(run: (mainClass: string, args: string[]) => Promise<void>): Promise<void> {
  for (const u of scramUsers()) {
    try {
      await run('kafka.admin.ConfigCommand', [
        '--bootstrap-server',
        `127.0.0.1:${PORTS.kafka}`,
        '--alter',
        '--entity-type',
        'users',
        '--entity-name',
        u.username,
        '--add-config',
        `${u.mechanism}=[password=${password(u.passwordFile)}]`,
      ]);
    } catch (e) {
      const why = (e as Error).message.split(password(u.passwordFile)).join('***');
      throw new Error(`creating SCRAM user ${u.username} (${u.mechanism}) failed: ${why}`);
    }
  }
  markScramUsers();
}
