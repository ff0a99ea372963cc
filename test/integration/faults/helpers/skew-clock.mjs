// A Node preload (`node --import`, via NODE_OPTIONS) that moves this process's wall clock by
// KHRUN_TEST_CLOCK_SKEW_MS milliseconds, as libfaketime's FAKETIME with FAKETIME_DONT_FAKE_MONOTONIC did:
// Date.now(), new Date(), Date() and performance.timeOrigin are skewed; performance.now(), process.hrtime
// and timers (the monotonic clock) stay true. Plain JavaScript, so it loads before any loader is registered.
const skewMs = Number(process.env.KHRUN_TEST_CLOCK_SKEW_MS ?? '0');
if (!Number.isFinite(skewMs)) {
  throw new Error(
    `KHRUN_TEST_CLOCK_SKEW_MS=${process.env.KHRUN_TEST_CLOCK_SKEW_MS} is not a number of milliseconds`,
  );
}
if (skewMs !== 0) {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  const now = () => realNow() + skewMs;
  // A function, not a subclass: every Date (Node's own included) stays `instanceof Date`.
  function SkewedDate(...args) {
    if (!new.target) return new RealDate(now()).toString();
    return Reflect.construct(RealDate, args.length === 0 ? [now()] : args, new.target);
  }
  Object.setPrototypeOf(SkewedDate, RealDate);
  SkewedDate.prototype = RealDate.prototype;
  SkewedDate.now = now;
  // Code holding the original Date (or Date.prototype.constructor) reads the same skewed time.
  RealDate.now = now;
  Object.defineProperty(RealDate.prototype, 'constructor', {
    value: SkewedDate,
    writable: true,
    configurable: true,
  });
  globalThis.Date = SkewedDate;
  const timeOrigin = performance.timeOrigin + skewMs;
  Object.defineProperty(performance, 'timeOrigin', { get: () => timeOrigin, configurable: true });
}
