/** Whether a process is alive (EPERM: it is, but not ours to signal). No test-runner imports: child processes load it too. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
