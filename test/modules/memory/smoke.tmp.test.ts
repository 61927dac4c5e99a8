import { expect, it } from 'vitest';
import { call, createUser, setupApp } from '../../helpers/app.js';
const { app } = await setupApp();
it('smoke', async () => {
  const u = await createUser(app);
  const { body: m } = await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'Booked a flight from Berlin to Lisbon with TAP for 142 euros' } }, 201);
  await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'The user prefers aisle seats on long flights' } }, 201);
  await call(app, { method: 'POST', url: '/memory', headers: u.headers, payload: { content: 'Deployed the billing service to production' } }, 201);
  const { body } = await call(app, { method: 'GET', url: '/memory/search?q=flight%20to%20lisbon', headers: u.headers }, 200);
  console.log(JSON.stringify(body, null, 1));
  const { body: st } = await call(app, { method: 'GET', url: '/memory/stats', headers: u.headers }, 200);
  console.log(st);
  expect(m.id).toMatch(/^mem_/);
});
