/**
 * What ingest and maintenance both send through Temporal history about files. Everything here
 * crosses history as JSON: data files are in their wire form (iceberg/spec/data-file.ts).
 */

/** A DataFile in its JSON wire form; opaque to workflows. */
export type WireDataFile = Record<string, unknown>;

/**
 * A large file list staged in the object store in place of its entries (table/staged-files.ts):
 * an Iceberg manifest under `<table location>/metadata/floe-staged/`, named `<commitId>-g<group>-a<attempt>.avro`.
 * A type (not an interface) so it is a WireDataFile too: file lists stay `Record<string, unknown>[]`.
 */
export type StagedFileList = {
  /** Location of the staged list. */
  stagedFiles: string;
  /** Data files it holds. */
  count: number;
  /** Size of the staged object. */
  bytes: number;
};

/**
 * An element of a file list in history: a data file in wire form, or a StagedFileList of them.
 * The workflow only concatenates such lists (so a reference passes through it unchanged); the
 * commit reads staged lists back. Small lists stay inline, exactly as before staging existed.
 */
export type FileListEntry = WireDataFile;
