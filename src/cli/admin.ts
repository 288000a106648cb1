import { runAdmin } from './run-admin';

// A reader that stops early (`… | head`) closes the pipe: its choice, not a failure worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

runAdmin(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr }).then((code) =>
  process.exit(code),
);
