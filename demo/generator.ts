/**
 * Sample order events: every 0.1 s of event time on 1 July 2026 an order is placed, and each
 * order is paid a few seconds (of event time) later. Event ids are unique; messages are keyed by
 * order id, so one order's events stay in one Kafka partition, in order.
 * Deterministic: event n is a pure function of n, so any run can be reproduced and checked.
 */
export interface OrderEvent {
  event_id: string;
  order_id: number;
  event_type: 'placed' | 'paid';
  event_time: string;
  customer_id: number;
  amount: number;
  currency: string;
}

const DAY_START_MS = Date.UTC(2026, 6, 1);
const STEP_MS = 100;
/** Payment arrives 3.0 s of event time after placement: 30 placement steps. */
const PAY_DELAY_STEPS = 30;

/** Pseudo-random but deterministic per order (a small integer hash). */
const mix = (n: number): number => {
  let x = (n ^ 0x9e3779b9) >>> 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0;
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
};

/** Events in emission order: at step s, order s is placed and then order s-30 is paid. */
export function* orderEvents(): Generator<OrderEvent> {
  for (let step = 0; step < 86_400_000 / STEP_MS; step++) {
    const t = new Date(DAY_START_MS + step * STEP_MS).toISOString();
    const due: Array<['placed' | 'paid', number]> = [['placed', step]];
    if (step >= PAY_DELAY_STEPS) due.push(['paid', step - PAY_DELAY_STEPS]);
    for (const [type, order] of due) {
      const h = mix(order);
      yield {
        event_id: `evt-${order}-${type}`,
        order_id: 1_000_000 + order,
        event_type: type,
        event_time: t,
        customer_id: 10_000 + (h % 5000),
        amount: Math.round((h % 100_000) + 99) / 100,
        currency: ['EUR', 'USD', 'GBP'][h % 3]!,
      };
    }
  }
}

export const eventKey = (e: OrderEvent): string => String(e.order_id);
