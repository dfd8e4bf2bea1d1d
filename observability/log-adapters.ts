/**
 * The Temporal runtime's and kafkajs' loggers as views of floe's pino logger, so the worker writes
 * one stream of lines: Temporal's workflow `log` (through the worker's sink: meta carries
 * workflowId, runId, workflowType), activity `log` and core's forwarded logs; kafkajs' client logs
 * (warnings and errors by default).
 */
import type { LogLevel as TemporalLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';
import { logLevel as kafkaLevel, type logCreator } from 'kafkajs';
import type { Level, LevelWithSilent } from 'pino';
import type { Logger } from './log';

const FROM_TEMPORAL: Record<TemporalLevel, Level> = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

/** Temporal SDK Logger -> pino (for `Runtime.install({ logger })`). */
export function temporalLogger(l: Logger): TemporalLogger {
  const at = (level: Level) => (message: string, meta?: LogMetadata) => l[level]({ ...meta, component: 'temporal' }, message);
  return {
    log: (level, message, meta) => at(FROM_TEMPORAL[level] ?? 'info')(message, meta),
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  };
}

/** The most verbose core level worth forwarding for a pino level (core at INFO/DEBUG is chatty). */
export function temporalCoreLevel(level: LevelWithSilent): TemporalLevel {
  return level === 'trace'
    ? 'DEBUG'
    : level === 'debug'
      ? 'INFO'
      : level === 'error' || level === 'fatal' || level === 'silent'
        ? 'ERROR'
        : 'WARN';
}

/**
 * The kafkajs client level for a pino level: warnings and errors by default; INFO (group joins,
 * rebalances) at debug; kafkajs' DEBUG (every request) only at trace.
 */
export function kafkaLogLevel(level: LevelWithSilent): kafkaLevel {
  switch (level) {
    case 'trace':
      return kafkaLevel.DEBUG;
    case 'debug':
      return kafkaLevel.INFO;
    case 'info':
    case 'warn':
      return kafkaLevel.WARN;
    case 'error':
    case 'fatal':
      return kafkaLevel.ERROR;
    case 'silent':
      return kafkaLevel.NOTHING;
  }
}

const FROM_KAFKA: Record<number, Level> = {
  [kafkaLevel.ERROR]: 'error',
  [kafkaLevel.WARN]: 'warn',
  [kafkaLevel.INFO]: 'info',
  [kafkaLevel.DEBUG]: 'debug',
};

/** A kafkajs `logCreator` writing to `l` (kafkajs has already filtered by the client's logLevel). */
export function kafkaLogCreator(l: () => Logger): logCreator {
  return () =>
    ({ namespace, level, log: entry }) => {
      // kafkajs puts its own timestamp and logger name in every entry; pino has the time.
      // eslint-disable-next-line @typescript-eslint/no-unused-vars
      const { message, timestamp, logger, ...extra } = entry as { message: string; timestamp?: unknown; logger?: unknown };
      l()[FROM_KAFKA[level] ?? 'info']({ component: 'kafkajs', namespace, ...extra }, message);
    };
}
