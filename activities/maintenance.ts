/** Maintenance activities (compaction, expiry, orphan removal) are added here by issue #4. */
import type { Deps } from './index';

export const createMaintenanceActivities = (_deps: Deps) => ({});
