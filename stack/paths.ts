import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

// Everything the stack installs or writes lives under FLOE_HOME, outside the repo, so a clean
// clone never carries binaries and `rm -rf $FLOE_HOME` is a full reset.

/** Root of the stack's cache, data, logs and run state. */
export function floeHome(): string {
  return resolve(process.env.FLOE_HOME ?? join(homedir(), '.cache', 'floe'));
}

export function stackPaths(home = floeHome()) {
  return {
    home,
    venv: join(home, 'venv'),
    kafka: join(home, 'kafka'),
    kafkaLibs: join(home, 'kafka', 'libs'),
    m2: join(home, 'm2'),
    data: join(home, 'data'),
    logs: join(home, 'logs'),
    run: join(home, 'run'),
    /** Repository files the stack reads (pom.xml, python helpers). */
    stackDir: __dirname,
    pyDir: join(__dirname, 'py'),
  };
}
