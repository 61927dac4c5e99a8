/** Analytics — errors: periods and filters are validated (400 problems, never 500); unknown services are 404. */
import { describe, expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';

const { app } = await setupApp();
const pro = await createUser(app, { roles: ['pro'] });
const admin = await createUser(app, { roles: ['admin'] });

async function expectProblem(
  user: { headers: Record<string, string> },
  url: string,
  status: number,
  code: string,
  pointer?: string,
) {
  const res = await app.inject({ method: 'GET', url, headers: user.headers });
  expect(res.statusCode, `${url}: ${res.body}`).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json().code).toBe(code);
  if (pointer) expect(JSON.stringify(res.json().errors ?? [])).toContain(pointer);
}

describe('analytics — periods', () => {
  it('rejects unknown windows, bad dates, reversed and too long periods, and window with from/to', async () => {
    for (const path of ['/analytics/user', '/analytics/services', '/analytics/tools', '/analytics/sessions']) {
      await expectProblem(pro, `${path}?window=1y`, 400, 'validation_failed');
      await expectProblem(pro, `${path}?from=yesterday`, 400, 'validation_failed');
      await expectProblem(pro, `${path}?window=7d&from=2024-01-01T00:00:00Z`, 400, 'validation_failed', '/window');
      await expectProblem(
        pro,
        `${path}?from=2024-02-01T00:00:00Z&to=2024-01-01T00:00:00Z`,
        400,
        'validation_failed',
        '/from',
      );
      await expectProblem(
        pro,
        `${path}?from=2022-01-01T00:00:00Z&to=2024-01-01T00:00:00Z`,
        400,
        'validation_failed',
        '/from',
      );
      await expectProblem(pro, `${path}?bogus=1`, 400, 'validation_failed');
    }
    await expectProblem(admin, '/analytics/system?window=2d', 400, 'validation_failed');
    await expectProblem(admin, '/analytics/endpoints?to=2024-13-01T00:00:00Z', 400, 'validation_failed');
  });

  it('accepts a period in the future or exactly 366 days long', async () => {
    const { body } = await call(
      app,
      { method: 'GET', url: '/analytics/user?from=2100-01-01T00:00:00Z&to=2100-01-02T00:00:00Z', headers: pro.headers },
      200,
    );
    expect(body.totals.calls).toBe(0);
    await call(
      app,
      {
        method: 'GET',
        url: '/analytics/sessions?from=2023-01-01T00:00:00Z&to=2024-01-02T00:00:00Z',
        headers: pro.headers,
      },
      200,
    );
  });
});

describe('analytics — filters', () => {
  it('rejects bad scopes, sorts, methods and limits', async () => {
    await expectProblem(pro, '/analytics/tools?scope=everyone', 400, 'validation_failed');
    await expectProblem(pro, '/analytics/tools?limit=0', 400, 'validation_failed');
    await expectProblem(pro, '/analytics/services?limit=101', 400, 'validation_failed');
    await expectProblem(pro, '/analytics/realtime?scope=galaxy', 400, 'validation_failed');
    await expectProblem(pro, '/analytics/realtime?window=7d', 400, 'validation_failed');
    await expectProblem(admin, '/analytics/endpoints?sort=name', 400, 'validation_failed');
    await expectProblem(admin, '/analytics/endpoints?method=G3T', 400, 'validation_failed');
    await expectProblem(admin, '/analytics/endpoints?limit=501', 400, 'validation_failed');
  });

  it('answers 404 for a service that does not exist', async () => {
    await expectProblem(pro, '/analytics/services?service_id=svc_00000000000000000000000000', 404, 'not_found');
    await expectProblem(
      pro,
      '/analytics/tools?scope=owned&service_id=svc_00000000000000000000000000',
      404,
      'not_found',
    );
  });
});
