/** Worker activity slots from FLOE_ACTIVITY_SLOTS (workers/index.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { activitySlots } from '../../workers';

void test('fixed 16 slots by default; resource-based on request; anything else is refused by name', () => {
  assert.deepEqual(activitySlots(undefined), { maxConcurrentActivityTaskExecutions: 16 });
  assert.deepEqual(activitySlots('fixed'), { maxConcurrentActivityTaskExecutions: 16 });
  const r = activitySlots('resource');
  assert.equal(r.maxConcurrentActivityTaskExecutions, undefined);
  assert.ok(r.tuner && 'activityTaskSlotSupplier' in r.tuner);
  assert.deepEqual((r.tuner.activityTaskSlotSupplier as { minimumSlots?: number }).minimumSlots, 2);
  assert.throws(() => activitySlots('resources'), /FLOE_ACTIVITY_SLOTS: expected fixed or resource, found "resources"/);
});
