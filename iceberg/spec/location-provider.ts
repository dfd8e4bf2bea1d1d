/**
 * Where a table's new data files go, from its properties, as Java's LocationProviders and
 * PyIceberg's / iceberg-rust's location generators decide it:
 * - `write.data.path` (else `<location>/data`) is the data directory;
 * - by default a file goes to `<data>/<partition path>/<file>`;
 * - `write.object-storage.enabled=true` spreads files over hashed prefixes (S3 scales request
 *   rates per prefix): `<data>/<hash>/<partition path>/<file>`, or `<data>/<hash>-<file>` with
 *   `write.object-storage.partitioned-paths=false`. The hash is murmur3_x86_32 of
 *   `<partition path>/<file>` (or `<file>`), its low 20 bits in binary as `bbbb/bbbb/bbbb/bbbbbbbb`,
 *   the same string Java and PyIceberg compute, so every engine lays one table out alike.
 * One provider for every writer (ingest, dead letters, compaction): none builds paths itself.
 */
import { murmur3x86_32 } from './murmur3';
import { WRITE_DATA_PATH } from './table-properties';

export const WRITE_OBJECT_STORAGE_ENABLED = 'write.object-storage.enabled';
export const WRITE_OBJECT_STORAGE_PARTITIONED_PATHS = 'write.object-storage.partitioned-paths';

export interface LocationProvider {
  /** The data directory (`write.data.path`, else `<location>/data`), no trailing slash. */
  readonly dataPath: string;
  /** The location of data file `fileName` in the partition at `partitionPath` ('' or absent: unpartitioned). */
  newDataLocation(fileName: string, partitionPath?: string): string;
}

const HASH_BITS = 20;
const DIR_LENGTH = 4;
const DIR_DEPTH = 3;

/** The entropy directories of `name`: the low 20 bits of its murmur3 hash in binary, split 4/4/4/8. */
export function objectStorageHash(name: string): string {
  const top = 1 << HASH_BITS;
  const bits = ((murmur3x86_32(Buffer.from(name, 'utf8')) & (top - 1)) | top).toString(2).slice(-HASH_BITS);
  const dirs: string[] = [];
  for (let i = 0; i < DIR_DEPTH * DIR_LENGTH; i += DIR_LENGTH) dirs.push(bits.slice(i, i + DIR_LENGTH));
  dirs.push(bits.slice(DIR_DEPTH * DIR_LENGTH));
  return dirs.join('/');
}

const isTrue = (v: string | undefined, dflt: boolean): boolean => (v === undefined ? dflt : v.trim().toLowerCase() === 'true');

export function locationProvider(m: { location: string; properties: Readonly<Record<string, string>> }): LocationProvider {
  const custom = m.properties[WRITE_DATA_PATH];
  const dataPath = custom ? custom.replace(/\/+$/, '') : `${m.location.replace(/\/+$/, '')}/data`;
  if (!isTrue(m.properties[WRITE_OBJECT_STORAGE_ENABLED], false)) {
    return { dataPath, newDataLocation: (f, p) => (p ? `${dataPath}/${p}/${f}` : `${dataPath}/${f}`) };
  }
  const partitioned = isTrue(m.properties[WRITE_OBJECT_STORAGE_PARTITIONED_PATHS], true);
  return {
    dataPath,
    newDataLocation: (f, p) => {
      if (partitioned && p) {
        const name = `${p}/${f}`;
        return `${dataPath}/${objectStorageHash(name)}/${name}`;
      }
      return partitioned ? `${dataPath}/${objectStorageHash(f)}/${f}` : `${dataPath}/${objectStorageHash(f)}-${f}`;
    },
  };
}
