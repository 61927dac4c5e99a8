/**
 * An agent that authenticates with its client credentials (renewed by the SDK) and keeps state in
 * its key-value memory. Create the agent first: `agent-platform agents create --name counter`.
 *   AGENT_PLATFORM_URL=… AGENT_PLATFORM_CLIENT_ID=… AGENT_PLATFORM_CLIENT_SECRET=… npx tsx examples/agent-kv-memory.ts
 */
import { AgentPlatform, AgentPlatformError } from '@agent-platform/sdk';

const agent = new AgentPlatform(); // client credentials from the environment

let runs = 0;
try {
  runs = (await agent.agentMemory.get('state/runs')).value as number;
} catch (err) {
  if (!(err instanceof AgentPlatformError && err.code === 'not_found')) throw err;
}
await agent.agentMemory.put('state/runs', runs + 1);
await agent.agentMemory.put(`state/last-run`, { at: new Date().toISOString() }, { ttl_seconds: 86_400 });

console.log(`run number ${runs + 1}`);
for await (const entry of agent.agentMemory.list({ prefix: 'state/' }))
  console.log(entry.key, JSON.stringify(entry.value));
