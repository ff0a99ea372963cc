/**
 * The time an engine decides by. Injected so that the pure decisions and their drivers are tested without
 * fake timers, and so that a single time source can be swapped in where two machines' clocks must not be
 * compared.
 */
export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };
