/**
 * Memory add + search with the SDK.
 *   AGENT_PLATFORM_URL=http://localhost:3000 AGENT_PLATFORM_API_KEY=apk_… npx tsx examples/memory-search.ts
 */
import { AgentPlatform } from '@agent-platform/sdk';

const client = new AgentPlatform(); // URL and API key from the environment

for (const content of [
  'The staging deploy key rotates every Monday',
  'Lunch near the office: ramen or tacos',
  'Staging runs PostgreSQL 15',
]) {
  await client.memory.add({ content, metadata: { example: 'memory-search' } });
}

const { data } = await client.memory.search({ q: 'when does the staging key rotate?', limit: 2 });
for (const m of data) console.log(`${m.score.toFixed(3)}  ${m.content}`);
