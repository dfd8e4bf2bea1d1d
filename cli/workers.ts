/**
 * `floe workers`: which worker processes poll the config's task queue (Temporal's
 * DescribeTaskQueue), for operators and as the compose worker's healthcheck: exit 3 while no
 * worker polls for workflow tasks.
 */
import type { Command } from 'commander';
import { configOf, printJson, printTable } from './common';
import { EXIT } from './exit';

// temporal.api.enums.v1.TaskQueueType (the proto package is not a direct dependency).
const TASK_QUEUE_TYPES = { workflow: 1, activity: 2 } as const;

interface TaskQueuePoller {
  identity: string;
  kind: keyof typeof TASK_QUEUE_TYPES;
  lastAccessTime: string | null;
}

export function registerWorkersCommand(program: Command): void {
  program
    .command('workers')
    .description("worker processes polling the config's task queue (exit 3 when none polls)")
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const cfg = configOf(cmd);
      const { connectClient } = await import('../client');
      const fc = await connectClient(cfg);
      try {
        // The namespace the connection resolved (config, else the Temporal CLI's env and profile).
        const namespace = fc.client.options.namespace;
        const pollers: TaskQueuePoller[] = [];
        for (const [kind, taskQueueType] of Object.entries(TASK_QUEUE_TYPES) as [TaskQueuePoller['kind'], number][]) {
          const r = await fc.client.workflowService.describeTaskQueue({
            namespace,
            taskQueue: { name: cfg.temporal.taskQueue },
            taskQueueType,
          });
          for (const p of r.pollers ?? []) {
            const s = p.lastAccessTime?.seconds;
            pollers.push({ identity: p.identity ?? '', kind, lastAccessTime: s == null ? null : new Date(Number(s) * 1000).toISOString() });
          }
        }
        if (o.json) printJson({ namespace, taskQueue: cfg.temporal.taskQueue, pollers });
        else {
          console.log(`task queue "${cfg.temporal.taskQueue}" in namespace ${namespace}:`);
          printTable(pollers.map((p) => ({ identity: p.identity, polls_for: p.kind, last_poll: p.lastAccessTime ?? '' })));
        }
        if (!pollers.some((p) => p.kind === 'workflow')) process.exitCode = EXIT.notFound;
      } finally {
        await fc.close();
      }
    });
}
