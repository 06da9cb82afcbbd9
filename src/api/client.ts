/** The client side of the local API, for CLI commands run while another process holds the embedded database. */
export class ApiClient {
  constructor(
    readonly url: string,
    private readonly token: string,
  ) {}

  async request<T>(method: 'GET' | 'POST', path: string, payload?: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: payload !== undefined ? JSON.stringify(payload) : undefined,
    });
    return { status: res.status, body: (await res.json()) as T };
  }
}
