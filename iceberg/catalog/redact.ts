/**
 * The one redaction helper: catalog URIs carry passwords (`postgresql://user:pass@host/db`), REST
 * catalogs tokens and client secrets, and an error message or log line that quotes a URI or wraps
 * a driver's error must never show them. Every message built from a URI, a config value or a
 * foreign error (pg, fetch) goes through `redactSecrets`; errors kept as a `cause` through
 * `redactError`, since loggers print the cause chain too.
 */

const MASK = '***';

/**
 * Secrets shorter than this are not replaced wherever they occur in free text (a password like
 * "floe" would mask every "floe" of a message); they are still masked inside URIs and key=value.
 */
const MIN_FREE_TEXT_SECRET_LENGTH = 6;

// scheme://user:password@host: the password runs to the last '@' before the path (passwords with
// an unescaped '@' exist in the wild).
const URI_USERINFO = /([a-z][a-z0-9+.-]*:\/\/)([^\s:/?#@]*):([^\s/?#]*)@/gi;
// password=... in query strings and libpq-style DSNs; token/secret/credential keys likewise.
const KEY_VALUE =
  /\b(password|passwd|pwd|sslpassword|secret|client_secret|secret_access_key|token|access_token|credential)=([^&\s'",;]+)/gi;
// A bearer token in a header that was echoed into a message.
const BEARER = /\b(Bearer)\s+[A-Za-z0-9._~+/=-]+/g;

/** `text` with URI passwords, key=value secrets, bearer tokens and the given secret values masked. */
export function redactSecrets(text: string, secrets: Iterable<string | null | undefined> = []): string {
  let out = text
    .replace(URI_USERINFO, (_m, scheme: string, user: string) => `${scheme}${user}:${MASK}@`)
    .replace(KEY_VALUE, (_m, key: string) => `${key}=${MASK}`)
    .replace(BEARER, `$1 ${MASK}`);
  for (const s of secrets) {
    if (s && s.length >= MIN_FREE_TEXT_SECRET_LENGTH) out = out.split(s).join(MASK);
  }
  return out;
}

/** The password of a URI's userinfo (decoded), if any: a secret to mask in free text too. */
export function uriPassword(uri: string): string | undefined {
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^\s:/?#@]*:([^\s/?#]*)@/i.exec(uri);
  if (!m || m[1] === undefined || m[1] === '') return undefined;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return m[1];
  }
}

/** Every secret a catalog config holds (URI password raw and decoded, token, credential, S3 secret). */
export function configSecrets(cfg: {
  uri?: string;
  token?: string;
  credential?: string;
  s3?: { secretAccessKey?: string; sessionToken?: string };
}): string[] {
  const out: string[] = [];
  if (cfg.uri) {
    const raw = /^[a-z][a-z0-9+.-]*:\/\/[^\s:/?#@]*:([^\s/?#]*)@/i.exec(cfg.uri)?.[1];
    if (raw) out.push(raw);
    const decoded = uriPassword(cfg.uri);
    if (decoded && decoded !== raw) out.push(decoded);
  }
  if (cfg.token) out.push(cfg.token);
  if (cfg.credential) {
    out.push(cfg.credential);
    const secret = cfg.credential.slice(cfg.credential.indexOf(':') + 1);
    if (secret) out.push(secret);
  }
  if (cfg.s3?.secretAccessKey) out.push(cfg.s3.secretAccessKey);
  if (cfg.s3?.sessionToken) out.push(cfg.s3.sessionToken);
  return out;
}

/**
 * A copy of `e` safe to log or wrap: message, stack and the whole cause chain redacted, and only
 * the plain fields (code, errno, syscall, SQLSTATE details) kept that callers inspect. Never
 * mutates `e`. Non-errors become an Error with their redacted string form.
 */
export function redactError(e: unknown, secrets: Iterable<string | null | undefined> = [], depth = 0): Error {
  const list = [...secrets];
  if (!(e instanceof Error)) return new Error(redactSecrets(String(e), list));
  const copy = new Error(redactSecrets(e.message, list));
  copy.name = e.name;
  copy.stack = e.stack === undefined ? undefined : redactSecrets(e.stack, list);
  const extra = copy as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(e)) {
    if (k === 'cause' || k === 'input' || k === 'config' || k === 'client' || k === 'connectionParameters') continue;
    if (typeof v === 'string') extra[k] = redactSecrets(v, list);
    else if (typeof v === 'number' || typeof v === 'boolean') extra[k] = v;
  }
  if (e.cause !== undefined && depth < 8) copy.cause = redactError(e.cause, list, depth + 1);
  return copy;
}
