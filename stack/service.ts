import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { tailFile } from './proc';

export type ServiceName =
  'temporal' | 'kafka' | 's3' | 'postgres' | 'iceberg-rest' | 'temporal-tls' | 'schema-registry' | 'postgres-cdc' | 'kafka-connect';
/** The default services: what `stack up` and ensureStack() without names install and start. */
export const SERVICE_NAMES: readonly ServiceName[] = [
  'temporal',
  'kafka',
  's3',
  'postgres',
  'iceberg-rest',
  'temporal-tls',
  'schema-registry',
];

/**
 * Services of opt-in profiles (`stack up --profile debezium`): started only when named or by their
 * profile; `stack status` shows them once installed, `stack down` stops them first (before the
 * Kafka and PostgreSQL they use).
 */
export const PROFILE_SERVICE_NAMES: readonly ServiceName[] = ['postgres-cdc', 'kafka-connect'];

export interface Health {
  ok: boolean;
  detail: string;
}

export interface ServiceStatus {
  name: ServiceName;
  installed: boolean;
  running: boolean;
  pid?: number;
  health: Health;
  endpoint: string;
  external: boolean;
  logFile: string;
}

/** One local service. Every method is idempotent; start() is a no-op when already healthy. */
export interface Service {
  readonly name: ServiceName;
  readonly logFile: string;
  /** Components that must be installed first (the Python venv provides two binaries). */
  readonly needs: readonly 'python'[];
  endpoint(): string;
  /** True when the endpoint was overridden by FLOE_*: never installed, started or stopped. */
  external(): boolean;
  installed(): boolean;
  install(log?: (msg: string) => void): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  health(): Promise<Health>;
  pid(): number | undefined;
}

/**
 * A start/install failure that names the service and the step or port, with the last lines of
 * the service's log so the cause is visible without opening files.
 */
export class StackError extends Error {
  constructor(
    readonly service: string,
    readonly step: string,
    detail: string,
    logFile?: string,
  ) {
    const tail = logFile ? `\n--- last 30 lines of ${logFile} ---\n${tailFile(logFile, 30)}\n---` : '';
    super(`${service}: ${step} failed: ${detail}${tail}`);
    this.name = 'StackError';
  }
}

/**
 * Install markers record the pins an install was made with; a changed pin (stack/versions.ts)
 * makes the marker stale and the install runs again.
 */
export function markerMatches(file: string, pins: unknown): boolean {
  if (!existsSync(file)) return false;
  try {
    return readFileSync(file, 'utf8') === JSON.stringify(pins, null, 2);
  } catch {
    return false;
  }
}

export function writeMarker(file: string, pins: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(pins, null, 2));
}
