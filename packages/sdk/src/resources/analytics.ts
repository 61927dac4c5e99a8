/** `analytics` group (roles `pro`, `enterprise`, `admin`; `system` and `endpoints` are admin-only). */
import { type Core, type Query, unwrap } from '../core.js';

export class AnalyticsResource {
  constructor(private readonly core: Core) {}
  user(query: Query<'analytics.user'> = {}) {
    return unwrap(this.core.http.GET('/analytics/user', { params: { query } }));
  }
  services(query: Query<'analytics.services'> = {}) {
    return unwrap(this.core.http.GET('/analytics/services', { params: { query } }));
  }
  tools(query: Query<'analytics.tools'> = {}) {
    return unwrap(this.core.http.GET('/analytics/tools', { params: { query } }));
  }
  sessions(query: Query<'analytics.sessions'> = {}) {
    return unwrap(this.core.http.GET('/analytics/sessions', { params: { query } }));
  }
  realtime(query: Query<'analytics.realtime'> = {}) {
    return unwrap(this.core.http.GET('/analytics/realtime', { params: { query } }));
  }
  system(query: Query<'analytics.system'> = {}) {
    return unwrap(this.core.http.GET('/analytics/system', { params: { query } }));
  }
  endpoints(query: Query<'analytics.endpoints'> = {}) {
    return unwrap(this.core.http.GET('/analytics/endpoints', { params: { query } }));
  }
}
