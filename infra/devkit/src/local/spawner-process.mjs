// The spawner's own process (see spawner.ts): a small Node process that starts processes for a large
// one. A fork costs in proportion to the forking process's memory, and Node's spawn holds the calling
// thread until the child has exec'd: from the kubelet (hundreds of MiB, a thousand pods) each spawn took
// ~15 ms of kernel time and held the kubelet's thread, from here ~2 ms and holds nothing of it.
//
// Protocol, over the IPC channel, one object per message:
//   → { op: 'start', id, command, args, env, logFile }   detached, stdout+stderr appended to logFile
//   ← { id, type: 'started', pid } then { id, type: 'exit', code, signal }, or { id, type: 'error', message }
//   → { op: 'run', id, command, args }                   output captured
//   ← { id, type: 'ran', error?, stdout, stderr }
// It ends when the channel closes; processes it started in their own session live on.
import { execFile, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';

const reply = (message) => {
  try {
    process.send?.(message);
  } catch {
    // the parent is gone: 'disconnect' ends this process
  }
};

const describe = (error) => (error instanceof Error ? error.message : String(error));

function start({ id, command, args, env, logFile }) {
  let fd;
  try {
    fd = openSync(logFile, 'a');
  } catch (error) {
    reply({ id, type: 'error', message: describe(error) });
    return;
  }
  let child;
  try {
    child = spawn(command, args, { env, stdio: ['ignore', fd, fd], detached: true });
  } catch (error) {
    reply({ id, type: 'error', message: describe(error) });
    return;
  } finally {
    closeSync(fd); // the child has its own copy
  }
  // A failed exec (ENOENT, EACCES) leaves no pid and is reported as 'error' on a later tick, with no 'exit'.
  child.once('error', (error) => {
    if (child.pid === undefined) reply({ id, type: 'error', message: describe(error) });
  });
  child.once('exit', (code, signal) => reply({ id, type: 'exit', code, signal }));
  if (child.pid !== undefined) reply({ id, type: 'started', pid: child.pid });
}

function run({ id, command, args }) {
  execFile(command, args, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
    reply({ id, type: 'ran', ...(error ? { error: describe(error) } : {}), stdout, stderr });
  });
}

process.on('message', (message) => {
  if (message?.op === 'start') start(message);
  else if (message?.op === 'run') run(message);
  else if (message?.id !== undefined) reply({ id: message.id, type: 'error', message: 'unknown op' });
});
process.on('disconnect', () => process.exit(0));
