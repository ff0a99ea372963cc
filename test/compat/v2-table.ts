import { buildText } from '../bench/source-build.ts';
import type { CompatResults, Outcome } from './v2-results.ts';

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

function outcome(o: Outcome): string {
  if ('missing' in o) return 'no khstate';
  if (o.ok) return 'OK';
  return `not OK: ${o.errors.map((e) => `“${e}”`).join(', ') || '(no errors)'}`;
}

/**
 * The docs/compatibility.md block of Kuberhealthy v2.7.1's own checks (pure): one row per check, what
 * each system recorded, whether it is the same, what was changed in the YAML, and how it was measured.
 */
export function renderV2Table(input: unknown): string {
  const r = input as CompatResults;
  const lines = [
    '| check (YAML in the v2.7.1 module) | under Kuberhealthy v2.7.1 | under khrun | same | changed in the YAML, note |',
    '|---|---|---|---|---|',
    ...r.rows.map((row) => {
      const notes = [...row.edits, ...(row.note ? [row.note] : [])].join('; ');
      return `| ${cell(row.check)} (\`${row.yaml}\`) | ${cell(outcome(row.kuberhealthy))} | ${cell(outcome(row.khrun))} | ${row.same ? 'yes' : row.explained ? 'no, explained' : '**no**'} | ${cell(notes)} |`;
    }),
    '',
    `Measured by \`npm run compat\` on ${r.measured.slice(0, 10)}, ${buildText(r.build)}: ${r.how}. Every YAML was moved from namespace ` +
      "`kuberhealthy` to the test's namespace (metadata and binding subjects). The daemon ran from " +
      `deploy/kuberhealthy.yaml with: ${r.daemonRewrites.map(cell).join('; ')}.`,
  ];
  return `${lines.join('\n')}\n`;
}
