import { Autocomplete, Badge, Button, Card, Chip, Code, Drawer, Group, ScrollArea, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useEffect, useState } from 'react';
import { api, listAll } from '../api';
import { SchemaForm, type JsonSchema } from '../SchemaForm';
import { ProblemAlert, Section, useLoad } from '../ui';

interface ToolHit {
  id: string;
  name: string;
  description: string;
  service: { id: string; name: string; display_name: string; category: string | null };
  score: number;
}
interface ServiceCard {
  id: string;
  name: string;
  display_name: string;
  description: string;
  category: string | null;
  tool_count: number;
}
/** What the drawer shows: a service's tools, or one of them. */
interface Target {
  id: string;
  name: string;
  tool?: string;
}
interface ManifestTool {
  name: string;
  description: string;
  input_schema: JsonSchema;
}

let sessionId: string | null = null;

/** Run a tool in the console's own session (created on first use), subscribing to the free plan when needed. */
async function runTool(serviceId: string, service: string, tool: string, args: Record<string, unknown>) {
  sessionId ??= (await api<{ id: string }>('POST', '/v1/agents', { name: 'console' })).id;
  const subs = await api<{ data: unknown[] }>('GET', `/subscriptions?service_id=${serviceId}&status=active`);
  if (subs.data.length === 0) await api('POST', '/subscriptions', { service_id: serviceId, plan: 'free' });
  return api('POST', `/v1/agents/${sessionId}/execute`, { service, tool, arguments: args });
}

export function MarketplacePage() {
  const [q, setQ] = useState('');
  const [debounced] = useDebouncedValue(q, 150);
  const [category, setCategory] = useState<string | null>(null);
  const [suggestions, setSuggestions] = useState<string[]>([]);
  const [open, setOpen] = useState<Target | null>(null);

  const categories = useLoad(async () => {
    const services = await listAll<{ category: string | null }>('/services');
    return [...new Set(services.map((s) => s.category).filter((c): c is string => !!c))].sort();
  });
  const tools = useLoad(async () => {
    if (!debounced.trim()) return [];
    const params = new URLSearchParams({ q: debounced.trim(), limit: '30' });
    if (category) params.set('category', category);
    return (await api<{ data: ToolHit[] }>('GET', `/search/tools?${params}`)).data;
  }, [debounced, category]);
  const services = useLoad(() => listAll<ServiceCard>(`/services${category ? `?category=${encodeURIComponent(category)}` : ''}`, 60), [category]);

  useEffect(() => {
    if (debounced.trim().length < 2) return setSuggestions([]);
    api<{ data: Array<{ text: string }> }>('GET', `/search/suggestions?q=${encodeURIComponent(debounced.trim())}&limit=8`).then(
      (r) => setSuggestions([...new Set(r.data.map((s) => s.text))]),
      () => setSuggestions([]),
    );
  }, [debounced]);

  return (
    <Stack>
      <Title order={2}>Marketplace</Title>
      <Autocomplete label="Search tools" placeholder="weather forecast, send email…" value={q} onChange={setQ} data={suggestions} />
      <Section state={categories}>
        {(cats) => (
          <Chip.Group value={category ?? ''} onChange={(v) => setCategory((v as string) || null)}>
            <Group gap="xs" aria-label="Categories">
              {cats.map((c) => (
                <Chip key={c} value={c}>
                  {c}
                </Chip>
              ))}
            </Group>
          </Chip.Group>
        )}
      </Section>
      {debounced.trim() ? (
        <Section state={tools} empty={(d) => d.length === 0}>
          {(d) => (
            <SimpleGrid cols={{ base: 1, md: 2, lg: 3 }}>
              {d.map((t) => (
                <Card key={t.id} withBorder>
                  <Group justify="space-between">
                    <Text fw={600}>{t.name}</Text>
                    {t.service.category ? <Badge variant="light">{t.service.category}</Badge> : null}
                  </Group>
                  <Text size="sm" c="dimmed">
                    {t.service.display_name || t.service.name}
                  </Text>
                  <Text size="sm" mt="xs" lineClamp={3}>
                    {t.description}
                  </Text>
                  <Button mt="sm" size="xs" variant="light" onClick={() => setOpen({ id: t.service.id, name: t.service.name, tool: t.name })} aria-label={`Details and try it: ${t.name}`}>
                    Details and try it
                  </Button>
                </Card>
              ))}
            </SimpleGrid>
          )}
        </Section>
      ) : (
        <Section state={services} empty={(d) => d.length === 0}>
          {(d) => (
            <SimpleGrid cols={{ base: 1, md: 2, lg: 3 }}>
              {d.map((sv) => (
                <Card key={sv.id} withBorder>
                  <Group justify="space-between">
                    <Text fw={600}>{sv.display_name || sv.name}</Text>
                    {sv.category ? <Badge variant="light">{sv.category}</Badge> : null}
                  </Group>
                  <Text size="sm" mt="xs" lineClamp={3}>
                    {sv.description}
                  </Text>
                  <Button mt="sm" size="xs" variant="light" onClick={() => setOpen({ id: sv.id, name: sv.name })} aria-label={`${sv.tool_count} tools of ${sv.name}`}>
                    {sv.tool_count} tools
                  </Button>
                </Card>
              ))}
            </SimpleGrid>
          )}
        </Section>
      )}
      <Drawer opened={!!open} onClose={() => setOpen(null)} position="right" size="lg" title={open ? `${open.name}${open.tool ? ` · ${open.tool}` : ''}` : ''}>
        {open ? <ServiceTools target={open} /> : null}
      </Drawer>
    </Stack>
  );
}

function ServiceTools({ target }: { target: Target }) {
  const manifest = useLoad(() => api<{ tools: ManifestTool[] }>('GET', `/services/${target.id}/manifest`), [target.id]);
  return (
    <Section state={manifest}>
      {(m) => {
        const tools = m.tools.filter((t) => !target.tool || t.name === target.tool);
        if (tools.length === 0) return <Text>This tool is no longer in the service.</Text>;
        return (
          <Stack>
            {tools.map((t) => (
              <ToolDetail key={t.name} serviceId={target.id} service={target.name} tool={t} />
            ))}
          </Stack>
        );
      }}
    </Section>
  );
}

function ToolDetail({ serviceId, service, tool }: { serviceId: string; service: string; tool: ManifestTool }) {
  const [result, setResult] = useState<unknown>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async (args: Record<string, unknown>) => {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      setResult(await runTool(serviceId, service, tool.name, args));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card withBorder>
      <Stack>
        <Title order={3}>{tool.name}</Title>
        <Text>{tool.description}</Text>
        <Title order={4}>Input schema</Title>
        <ScrollArea.Autosize mah={200}>
          <Code block>{JSON.stringify(tool.input_schema, null, 2)}</Code>
        </ScrollArea.Autosize>
        <Title order={4}>Try it</Title>
        <SchemaForm schema={tool.input_schema} onSubmit={(a) => void run(a)} busy={busy} />
        <ProblemAlert error={error} />
        {result ? (
          <Stack gap={4}>
            <Title order={4}>Result</Title>
            <Code block data-testid="tool-result">
              {JSON.stringify(result, null, 2)}
            </Code>
          </Stack>
        ) : null}
      </Stack>
    </Card>
  );
}
