import {
  Autocomplete,
  Badge,
  Button,
  Card,
  Chip,
  Code,
  Drawer,
  Group,
  ScrollArea,
  Select,
  SimpleGrid,
  Stack,
  Text,
  Textarea,
  Title,
} from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useEffect, useState } from 'react';
import { AgentPlatformError, all, client, type Body, type Result } from '../api';
import { SchemaForm, type JsonSchema } from '../SchemaForm';
import { ProblemAlert, Section, plural, useAction, useLoad } from '../ui';
import { connectAccount } from './Connections';

/** What the drawer shows: a service's tools, or one of them. */
interface Target {
  id: string;
  name: string;
  tool?: string;
}
type Manifest = Result<'marketplace.manifest'>;
type ManifestTool = Manifest['tools'][number];

let sessionId: string | null = null;

/** Run a tool in the console's own session (created on first use), subscribing to the free plan when needed. */
async function runTool(serviceId: string, service: string, tool: string, args: Record<string, unknown>) {
  sessionId ??= (await client.sessions.create({ name: 'console' })).id;
  const subs = await client.subscriptions.list({ service_id: serviceId, status: 'active' }).page();
  if (subs.data.length === 0) await client.subscriptions.create({ service_id: serviceId, plan: 'free' });
  return client.sessions.execute(sessionId, { service, tool, arguments: args });
}

export function MarketplacePage() {
  const [q, setQ] = useState('');
  const [debounced] = useDebouncedValue(q, 150);
  const [category, setCategory] = useState<string | null>(null);
  const [suggestions, setSuggestions] = useState<string[]>([]);
  const [open, setOpen] = useState<Target | null>(null);

  const categories = useLoad(async () => {
    const services = await all(client.services.list({ limit: 100 }));
    return [...new Set(services.map((s) => s.category).filter((c): c is string => !!c))].sort();
  });
  const tools = useLoad(async () => {
    if (!debounced.trim()) return [];
    return (await client.search.tools({ q: debounced.trim(), limit: 30, ...(category ? { category } : {}) }).page())
      .data;
  }, [debounced, category]);
  const services = useLoad(
    () => all(client.services.list({ limit: 60, ...(category ? { category } : {}) }), 60),
    [category],
  );

  useEffect(() => {
    if (debounced.trim().length < 2) return setSuggestions([]);
    client.search.suggestions({ q: debounced.trim(), limit: 8 }).then(
      (r) => setSuggestions([...new Set(r.data.map((s) => s.text))]),
      () => setSuggestions([]),
    );
  }, [debounced]);

  return (
    <Stack>
      <Title order={2}>Marketplace</Title>
      <Autocomplete
        label="Search tools"
        placeholder="weather forecast, send email…"
        value={q}
        onChange={setQ}
        data={suggestions}
      />
      <Section state={categories}>
        {(cats) => (
          <Chip.Group value={category ?? ''} onChange={(v) => setCategory((v as string) || null)}>
            <Group gap="xs" role="group" aria-label="Categories">
              <Chip value="">all</Chip>
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
        <Section
          state={tools}
          empty={(d) => d.length === 0}
          emptyText={`No tool matches “${debounced.trim()}”${category ? ` in ${category}` : ''}.`}
        >
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
                  <Button
                    mt="sm"
                    size="xs"
                    variant="light"
                    onClick={() => setOpen({ id: t.service.id, name: t.service.name, tool: t.name })}
                    aria-label={`Details and try it: ${t.name} of ${t.service.name}`}
                  >
                    Details and try it
                  </Button>
                </Card>
              ))}
            </SimpleGrid>
          )}
        </Section>
      ) : (
        <Section state={services} empty={(d) => d.length === 0} emptyText="No published services yet.">
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
                  <Button
                    mt="sm"
                    size="xs"
                    variant="light"
                    onClick={() => setOpen({ id: sv.id, name: sv.name })}
                    aria-label={`${plural(sv.tool_count, 'tool')} of ${sv.name}`}
                  >
                    {plural(sv.tool_count, 'tool')}
                  </Button>
                </Card>
              ))}
            </SimpleGrid>
          )}
        </Section>
      )}
      <Drawer
        opened={!!open}
        onClose={() => setOpen(null)}
        position="right"
        size="lg"
        title={open ? `${open.name}${open.tool ? ` · ${open.tool}` : ''}` : ''}
      >
        {open ? <ServiceTools target={open} /> : null}
      </Drawer>
    </Stack>
  );
}

function ServiceTools({ target }: { target: Target }) {
  const manifest = useLoad(() => client.services.manifest(target.id), [target.id]);
  return (
    <Section state={manifest}>
      {(m) => {
        const tools = m.tools.filter((t) => !target.tool || t.name === target.tool);
        return (
          <Stack>
            {m.auth.type === 'oauth2' ? <ConnectHint service={m.name} /> : null}
            {tools.length === 0 ? <Text>This tool is no longer in the service.</Text> : null}
            {tools.map((t) => (
              <ToolDetail key={t.name} serviceId={target.id} service={target.name} tool={t} />
            ))}
            <ReportForm serviceId={target.id} tools={m.tools} tool={target.tool} />
          </Stack>
        );
      }}
    </Section>
  );
}

/** Services with `auth.type: oauth2` run on the caller's own account at the upstream. */
function ConnectHint({ service }: { service: string }) {
  const { error, act } = useAction();
  return (
    <Card withBorder>
      <Group justify="space-between">
        <Text size="sm">This service acts on your own account there: connect it once.</Text>
        <Button size="xs" onClick={() => void act(() => connectAccount(service))}>
          Connect your account
        </Button>
      </Group>
      <ProblemAlert error={error} />
    </Card>
  );
}

function ToolDetail({ serviceId, service, tool }: { serviceId: string; service: string; tool: ManifestTool }) {
  const [result, setResult] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const { error, act } = useAction();
  const run = (args: Record<string, unknown>) =>
    act(async () => {
      setBusy(true);
      setResult(null);
      try {
        setResult(await runTool(serviceId, service, tool.name, args));
      } finally {
        setBusy(false);
      }
    });
  const needsConnection = error instanceof AgentPlatformError && error.code === 'connection_required';
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
        <SchemaForm schema={tool.input_schema as JsonSchema} onSubmit={(a) => void run(a)} busy={busy} />
        <ProblemAlert error={error} title={needsConnection ? 'Connect your account first' : undefined}>
          {needsConnection ? (
            <Button mt="xs" size="xs" onClick={() => void connectAccount(service)}>
              Connect your account
            </Button>
          ) : null}
        </ProblemAlert>
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

const REASONS: Array<{ value: Body<'publishing.report'>['reason']; label: string }> = [
  { value: 'broken', label: 'Broken' },
  { value: 'wrong_output', label: 'Wrong output' },
  { value: 'security', label: 'Security problem' },
  { value: 'other', label: 'Other' },
];

/** Report the service or one of its tools to its owner (`POST /v1/services/{id}/report`). */
function ReportForm({ serviceId, tools, tool }: { serviceId: string; tools: ManifestTool[]; tool?: string }) {
  const [reason, setReason] = useState<string | null>('broken');
  const [target, setTarget] = useState<string | null>(tool ?? '');
  const [details, setDetails] = useState('');
  const [sent, setSent] = useState<string | null>(null);
  const { error, act } = useAction();
  const submit = () =>
    act(async () => {
      const r = await client.publishing.report(serviceId, {
        reason: reason as Body<'publishing.report'>['reason'],
        ...(target ? { tool_id: target } : {}),
        ...(details.trim() ? { details: details.trim() } : {}),
      });
      setSent(`Reported (${r.id}); the owner sees it in their reports.`);
      setDetails('');
    });
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Title order={4}>Report a problem</Title>
        <Group grow>
          <Select label="Reason" data={REASONS} value={reason} onChange={setReason} allowDeselect={false} />
          <Select
            label="About"
            data={[{ value: '', label: 'The whole service' }, ...tools.map((t) => ({ value: t.name, label: t.name }))]}
            value={target}
            onChange={setTarget}
            allowDeselect={false}
          />
        </Group>
        <Textarea
          label="Details"
          value={details}
          onChange={(e) => setDetails(e.currentTarget.value)}
          autosize
          minRows={2}
        />
        <Button size="xs" variant="light" color="red" onClick={() => void submit()} disabled={!reason}>
          Send report
        </Button>
        {sent ? (
          <Text size="sm" role="status">
            {sent}
          </Text>
        ) : null}
        <ProblemAlert error={error} />
      </Stack>
    </Card>
  );
}
