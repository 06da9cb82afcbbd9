/** NOTIFY channels, per schema so two braid installations in one database never wake each other. */
export function channels(schema: string): { available: string; cancel: string; workflow: string; timer: string; effect: string } {
  return { available: `${schema}_available`, cancel: `${schema}_cancel`, workflow: `${schema}_workflow`, timer: `${schema}_timer`, effect: `${schema}_effect` };
}
