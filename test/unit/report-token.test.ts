import { describe, expect, it } from 'vitest';
import { authorizeReport, type ReportAccess } from '../../lib/report/authorize-report.ts';
import {
  parseReportPath,
  randomReportKey,
  reportingUrlFor,
  reportKeyOf,
  signedReportUrl,
  verifyRun,
} from '../../lib/report/report-token.ts';

const NOW = Date.UTC(2026, 11, 1, 9, 0, 0);
const RUN = {
  namespace: 'checks',
  checkName: 'dns.v2',
  uuid: '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
  deadlineMs: NOW + 60_000,
};
const KEY = reportKeyOf('k'.repeat(40));
const BASE = 'http://10.0.0.1:8080/externalCheckStatus';

/** The path after /externalCheckStatus of a signed URL. */
const restOf = (url: string) => new URL(url).pathname.slice('/externalCheckStatus'.length);

describe('signed reporting URLs', () => {
  it('name the run after the v2 path and verify only under their own key', () => {
    const url = signedReportUrl(BASE, KEY, RUN);
    expect(url).toMatch(
      /^http:\/\/10\.0\.0\.1:8080\/externalCheckStatus\/checks\/dns\.v2\/6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b\/1796115660000\/[A-Za-z0-9_-]{43}$/,
    );
    const path = parseReportPath(restOf(url));
    expect(path).toMatchObject({ kind: 'signed', run: RUN });
    if (path.kind !== 'signed') throw new Error('not signed');
    expect(verifyRun(KEY, RUN, path.mac)).toBe(true);
    expect(verifyRun(randomReportKey(), RUN, path.mac)).toBe(false);
    expect(verifyRun(KEY, { ...RUN, uuid: 'another-run' }, path.mac)).toBe(false);
    expect(verifyRun(KEY, { ...RUN, checkName: 'dns' }, path.mac)).toBe(false);
    expect(verifyRun(KEY, { ...RUN, namespace: 'other' }, path.mac)).toBe(false);
    expect(verifyRun(KEY, { ...RUN, deadlineMs: RUN.deadlineMs + 1 }, path.mac)).toBe(false);
  });

  it('keep a trailing slash of the base from doubling', () => {
    expect(signedReportUrl(`${BASE}/`, KEY, RUN)).toBe(signedReportUrl(BASE, KEY, RUN));
  });

  it('are resolved per run; a fixed URL stays as it is', () => {
    expect(reportingUrlFor(BASE, RUN)).toBe(BASE);
    expect(reportingUrlFor((run) => signedReportUrl(BASE, KEY, run), RUN)).toBe(
      signedReportUrl(BASE, KEY, RUN),
    );
  });

  it.each([
    ['', 'bare'],
    ['/', 'bare'],
    ['/checks/dns', 'malformed'],
    ['/checks/dns/uuid/1/mac/extra', 'malformed'],
    [`/checks/dns/uuid/${'a'.repeat(43)}`, 'malformed'],
    [`/checks/dns/uuid/1/${'a'.repeat(42)}`, 'malformed'],
    [`/checks/dns/uuid/soon/${'a'.repeat(43)}`, 'malformed'],
    [`/../dns/uuid/1/${'a'.repeat(43)}`, 'malformed'],
    [`/Checks/dns/uuid/1/${'a'.repeat(43)}`, 'malformed'],
    [`/checks/dns/uu id/1/${'a'.repeat(43)}`, 'malformed'],
    [`//dns/uuid/1/${'a'.repeat(43)}`, 'malformed'],
    [`/checks/dns/uuid/1/${'a'.repeat(43)}`, 'signed'],
  ])('read %j as %s', (rest, kind) => {
    expect(parseReportPath(rest).kind).toBe(kind);
  });
});

describe('authorizeReport (URL and headers only, before the body and any API request)', () => {
  const signed = parseReportPath(restOf(signedReportUrl(BASE, KEY, RUN)));
  const forged = parseReportPath(restOf(signedReportUrl(BASE, randomReportKey(), RUN)));
  const otherRun = parseReportPath(restOf(signedReportUrl(BASE, KEY, { ...RUN, uuid: 'other' })));
  const bare = parseReportPath('');
  const access = (over: Partial<ReportAccess> = {}): ReportAccess => ({
    key: KEY,
    unsigned: 'refuse',
    scope: 'all',
    ...over,
  });
  const who = { headerUuid: undefined, sourceIp: '10.1.2.3', nowMs: NOW };

  it('lets a signed URL through as its run, whatever the source address', () => {
    expect(authorizeReport(access(), signed, who)).toEqual({ ok: true, caller: { via: 'signed', run: RUN } });
    expect(authorizeReport(access(), signed, { ...who, nowMs: RUN.deadlineMs })).toMatchObject({ ok: true });
    expect(authorizeReport(access(), signed, { ...who, headerUuid: RUN.uuid })).toMatchObject({ ok: true });
  });

  it.each([
    ['a token signed by another key', access(), forged, who, /token in the reporting URL is not valid/],
    [
      'a header naming another run than the URL',
      access(),
      signed,
      { ...who, headerUuid: 'x' },
      /another run/,
    ],
    [
      'a finished run’s URL, replayed after its deadline',
      access(),
      signed,
      { ...who, nowMs: RUN.deadlineMs + 1 },
      /after the run's deadline/,
    ],
    ['a namespace not served', access({ scope: { namespaces: ['a'] } }), signed, who, /not served/],
    [
      'a signed URL where no key is configured',
      access({ key: undefined, unsigned: 'header' }),
      signed,
      who,
      /no report key/,
    ],
    [
      'anything where no key is configured and unsigned reports are refused (--no-reports)',
      access({ key: undefined }),
      signed,
      who,
      /this server takes no reports/,
    ],
    ['an unsigned report where only signed ones are taken', access(), bare, who, /only at the signed URL/],
    ['a made-up path', access(), parseReportPath('/x'), who, /not one khrun handed out/],
    [
      'an unsigned report without header where the source address names nothing',
      access({ unsigned: 'header' }),
      bare,
      who,
      /no kh-run-uuid header/,
    ],
  ])('refuses %s', (_name, acc, path, request, reason) => {
    const result = authorizeReport(acc, path, request);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(reason);
  });

  it("refuses another run's valid URL only once the khstate is read (it names a real run): the URL itself passes", () => {
    expect(authorizeReport(access(), otherRun, who)).toMatchObject({ ok: true, caller: { via: 'signed' } });
  });

  it('passes unsigned reports on as v2 identifies them, the source address only where allowed', () => {
    expect(authorizeReport(access({ unsigned: 'header' }), bare, { ...who, headerUuid: RUN.uuid })).toEqual({
      ok: true,
      caller: { via: 'unsigned', headerUuid: RUN.uuid, sourceIp: undefined },
    });
    expect(authorizeReport(access({ key: undefined, unsigned: 'header-and-ip' }), bare, who)).toEqual({
      ok: true,
      caller: { via: 'unsigned', headerUuid: undefined, sourceIp: '10.1.2.3' },
    });
  });
});
