#!/usr/bin/env node
// The built CLI; `npm ci` builds it (the prepare script). Output to a closed pipe (`| head`) is not an error.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(0);
});
const { main } = await import('../dist/src/cli/main.js');
process.exitCode = await main(process.argv.slice(2));
// the command is done: a connection left hanging (a network that went silent) must not keep the process alive
setTimeout(() => process.exit(), 100).unref();
