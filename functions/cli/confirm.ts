import { createInterface } from 'node:readline/promises';

/**
 * A yes/no question for the person at the terminal, or undefined when stdin or stderr is not one (a script,
 * a CI job, a pipe): the command then needs --yes. The question goes to stderr, so stdout keeps only the
 * output; an answer other than y or yes (or end of input) is no.
 */
export function terminalQuestion(
  stdin: NodeJS.ReadStream = process.stdin,
  stderr: NodeJS.WriteStream = process.stderr,
): ((question: string) => Promise<boolean>) | undefined {
  if (!stdin.isTTY || !stderr.isTTY) return undefined;
  return async (question) => {
    const rl = createInterface({ input: stdin, output: stderr, terminal: true });
    try {
      const answer = await new Promise<string>((resolve) => {
        rl.once('close', () => resolve(''));
        rl.question(question).then(resolve, () => resolve(''));
      });
      return /^(y|yes)$/i.test(answer.trim());
    } finally {
      rl.close();
    }
  };
}
