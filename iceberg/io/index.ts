export type { FileInfo, FileIO } from './file-io';
export { LocalFileIO, localPath } from './local';
export { MemoryFileIO, memoryFileIO } from './memory';
export { S3FileIO, parseS3Location, s3OptionsFromProperties, DEFAULT_MULTIPART_THRESHOLD } from './s3';
export type { S3Options } from './s3';
export { ResolvingFileIO, ScopedFileIO, resolveFileIO, schemeOf } from './resolve';
export type { FileIOOptions, Scheme } from './resolve';
