export * from './compiler/index.js';
export { formatDiagnostics, type OutputFormat } from './compiler/format/index.js';
export { renderGraph, type GraphFormat } from './compiler/graph.js';
