/**
 * Reads a secret the config names by reference (`<key>Env` / `<key>File`, config/types.ts
 * SecretRef). Called by the process that uses it, when it builds its client: the value never
 * enters the parsed config, workflow inputs, history, errors or logs. A failure names the config
 * key and the variable or file, never a value.
 */
import { readFileSync } from 'node:fs';
import type { SecretRef } from './types';

class SecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretError';
  }
}

/** The value behind `ref`, trimmed of a trailing newline (`echo x > file`); `key` is the config key that named it. */
export function readSecret(ref: SecretRef, key: string, env: NodeJS.ProcessEnv = process.env): string {
  if ('env' in ref) {
    const v = env[ref.env];
    if (v === undefined || v === '') throw new SecretError(`config ${key}Env: environment variable ${ref.env} is not set`);
    return v;
  }
  let v: string;
  try {
    v = readFileSync(ref.file, 'utf8');
  } catch (e) {
    throw new SecretError(`config ${key}File: cannot read ${ref.file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  v = v.replace(/\r?\n$/, '');
  if (v === '') throw new SecretError(`config ${key}File: ${ref.file} is empty`);
  return v;
}
