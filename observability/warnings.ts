/**
 * Process warnings floe knows to be noise (no imports: the CLI loads this before anything else).
 */

/**
 * kafkajs 2.2.4's request queue schedules its pending-request check with a negative delay when no
 * broker throttles it (requestQueue/index.js scheduleCheckPendingRequests); Node 24 warns once per
 * process ("TimeoutNegativeWarning ... set to 1"), which is exactly what kafkajs meant. Only that
 * warning, raised from that file, is dropped; every other warning is shown.
 */
export function isKafkajsNegativeTimeout(w: Error): boolean {
  return w.name === 'TimeoutNegativeWarning' && /kafkajs[\\/]src[\\/]network[\\/]requestQueue/.test(w.stack ?? '');
}

/** Keeps Node's own warning printer (CLI commands) but without kafkajs' negative-timeout warning. */
export function quietKafkajsTimeoutWarning(): void {
  const printers = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (w) => {
    if (!isKafkajsNegativeTimeout(w)) for (const p of printers) p(w);
  });
}
