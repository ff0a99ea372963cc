import { buildText } from '../bench/source-build.ts';
import type { CompatV3Results, FieldComparison } from './v3-results.ts';

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

function shownCell(f: FieldComparison | undefined): string {
  if (!f) return '';
  if (f.same) return cell(`same: ${f.kuberhealthy}`);
  return cell(`v3 ${f.kuberhealthy}, khrun ${f.khrun}: ${f.why}`);
}

/** The docs/compatibility.md block compat-v3 (pure): one row per v3 status field, one column per check. */
export function renderV3Table(results: CompatV3Results): string {
  const checks = [...new Set(results.fields.map((f) => f.check))];
  const fields = [...new Set(results.fields.map((f) => f.field))];
  const at = (check: string, field: string) =>
    results.fields.find((f) => f.check === check && f.field === field);
  const lines = [
    `Measured ${results.measured}, ${buildText(results.build)}, against Kuberhealthy ${results.kuberhealthy}. How: ${results.how}.`,
    `Kept apart: ${results.separation}.`,
    '',
    `| status field | ${checks.join(' | ')} |`,
    `|---|${checks.map(() => '---').join('|')}|`,
    ...fields.map((field) => `| \`${field}\` | ${checks.map((c) => shownCell(at(c, field))).join(' | ')} |`),
    '',
    "What v3.0.0's own API said about khrun's HealthChecks:",
    '',
    '| check | v3 `/json` | v3 `/metrics` `kuberhealthy_check` | matches khrun’s status |',
    '|---|---|---|---|',
    ...results.v3ReadsKhrun.map(
      (r) => `| ${r.check} | ${cell(r.json)} | ${cell(r.metric)} | ${r.matches ? 'yes' : 'no'} |`,
    ),
    '',
  ];
  return lines.join('\n');
}
