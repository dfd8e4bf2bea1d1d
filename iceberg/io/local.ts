/**
 * LocalFileIO: `file://` URIs on the local filesystem (also plain absolute paths, for tools).
 *
 * Writes are atomic (temp file in the same directory + rename), so a reader never sees a
 * half-written metadata.json or manifest even if the writer dies mid-write. Parent directories
 * are created on demand, as object stores have no directories.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { IcebergError } from '../errors';
import type { FileInfo, FileIO } from './file-io';

/** Marker in temp-file names; `list` hides them (a crashed writer leaves one behind). */
const TEMP_MARKER = '.floe-tmp-';

/**
 * The path after `file://` (or Hadoop's `file:/`) taken literally, never percent-decoded: partition
 * paths are URL-encoded by design (`name=b%C3%A9`), and Iceberg Java (Hadoop Path), PyIceberg
 * (pyarrow LocalFileSystem) and DuckDB all open the object by its literal name, as S3 keys are.
 */
export const localPath = (location: string): string => {
  if (location.startsWith('file:')) {
    // One slash (Java's `file:/p`), or `//` with no host or localhost: `file://otherhost/p` names
    // another machine's file, which must not be read as the local `//otherhost/p`.
    const m = /^file:(?:\/\/(?:localhost)?)?(\/(?!\/).*)$/i.exec(location);
    if (!m) throw IcebergError.mismatch('DataInvalid', 'local file location', 'file:///absolute/path', location, false);
    return m[1]!;
  }
  if (path.isAbsolute(location)) return location;
  throw IcebergError.mismatch('DataInvalid', 'local file location', 'file:///absolute/path or an absolute path', location, false);
};

/** Inverse of localPath for listing: keeps the caller's `file://` / `file:/` style, no encoding. */
const toLocation = (original: string, p: string): string =>
  original.startsWith('file://') ? `file://${p}` : original.startsWith('file:') ? `file:${p}` : p;

const mapError = (e: unknown, op: string, location: string): IcebergError => {
  if (e instanceof IcebergError) return e;
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') {
    return new IcebergError('NotFound', `${op} ${location}: file not found`, { retryable: false, context: { location }, cause: e });
  }
  return new IcebergError('Io', `${op} ${location} failed: ${(e as Error).message}`, { context: { location, code }, cause: e });
};

export class LocalFileIO implements FileIO {
  async read(location: string): Promise<Uint8Array> {
    try {
      const buf = await fs.readFile(localPath(location));
      return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    } catch (e) {
      throw mapError(e, 'read', location);
    }
  }

  async readRange(location: string, offset: number, length: number): Promise<Uint8Array> {
    let fh: fs.FileHandle | undefined;
    try {
      fh = await fs.open(localPath(location), 'r');
      const out = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        const { bytesRead } = await fh.read(out, done, length - done, offset + done);
        if (bytesRead === 0) break;
        done += bytesRead;
      }
      if (done < length) {
        throw IcebergError.mismatch('Io', `readRange ${location} at ${offset}: short read`, `${length} bytes`, `${done} bytes`, false);
      }
      return out;
    } catch (e) {
      throw mapError(e, 'readRange', location);
    } finally {
      await fh?.close();
    }
  }

  async write(location: string, data: Uint8Array): Promise<void> {
    const target = localPath(location);
    const tmp = `${target}${TEMP_MARKER}${randomBytes(6).toString('hex')}`;
    try {
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.writeFile(tmp, data);
      await fs.rename(tmp, target);
    } catch (e) {
      await fs.rm(tmp, { force: true }).catch(() => undefined);
      throw mapError(e, 'write', location);
    }
  }

  async delete(location: string): Promise<void> {
    try {
      await fs.rm(localPath(location), { force: true });
    } catch (e) {
      throw mapError(e, 'delete', location);
    }
  }

  async exists(location: string): Promise<boolean> {
    try {
      return (await fs.stat(localPath(location))).isFile();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw mapError(e, 'exists', location);
    }
  }

  async stat(location: string): Promise<FileInfo> {
    try {
      const st = await fs.stat(localPath(location));
      if (!st.isFile()) throw IcebergError.mismatch('NotFound', `stat ${location}`, 'a file', 'a directory', false);
      return { location, size: st.size, lastModified: st.mtimeMs };
    } catch (e) {
      throw mapError(e, 'stat', location);
    }
  }

  /** Files under the directory `prefix` (a directory, as for S3 where we append "/"). */
  async *list(prefix: string): AsyncIterable<FileInfo> {
    const root = localPath(prefix);
    const walk = async function* (dir: string): AsyncGenerator<FileInfo> {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') return; // an empty prefix lists nothing, as on S3
        throw mapError(e, 'list', prefix);
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const ent of entries) {
        const p = path.join(dir, ent.name);
        if (ent.isDirectory()) {
          yield* walk(p);
        } else if (ent.isFile() && !ent.name.includes(TEMP_MARKER)) {
          try {
            const st = await fs.stat(p);
            yield { location: toLocation(prefix, p), size: st.size, lastModified: st.mtimeMs };
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw mapError(e, 'list', prefix); // deleted while listing
          }
        }
      }
    };
    yield* walk(root);
  }
}
