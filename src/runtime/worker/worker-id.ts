import { hostname } from 'node:os';

/** A runtime's id: its host, process and a random suffix (apart from the worker, which a reading runtime never loads). */
export function workerId(): string {
  return `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
}
