/**
 * `@opentelemetry/api`, when the application installed it (an optional peer dependency: braid ships no SDK).
 * Loaded once, synchronously; absent, every span and instrument braid would make is skipped. The API keeps its
 * providers in one global registry, so the copy loaded here sees what the application registered.
 */
import { createRequire } from 'node:module';

export type OtelApi = typeof import('@opentelemetry/api');

let loaded: OtelApi | null | undefined;

export function otelApi(): OtelApi | null {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}

/** An OpenTelemetry TracerProvider (structurally: braid's types do not need the API installed). */
export interface TracerProviderLike {
  getTracer(name: string, version?: string): unknown;
}

/** An OpenTelemetry MeterProvider (structurally, as above). */
export interface MeterProviderLike {
  getMeter(name: string, version?: string): unknown;
}

/** Whether OpenTelemetry metrics would go anywhere: a provider given, or one registered globally. */
export function otelMetricsActive(provider?: MeterProviderLike): boolean {
  const api = otelApi();
  if (!api) return false;
  if (provider) return true;
  const noop = api.createNoopMeter().constructor;
  return !(api.metrics.getMeterProvider().getMeter('braid') instanceof noop);
}
