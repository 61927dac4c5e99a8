/** The console's shell: sign-in gate, navigation, pages. */
import { Alert, AppShell, Burger, Button, Center, Group, Loader, NavLink, Stack, Text, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useEffect } from 'react';
import { Link, Navigate, Route, Routes, useLocation } from 'react-router-dom';
import { startSignIn } from './api';
import { AuthProvider, useAuth } from './auth';
import { AgentsPage } from './pages/agents/AgentsPage';
import { AnalyticsPage } from './pages/Analytics';
import { ApiKeysPage } from './pages/ApiKeys';
import { ApprovalsPage } from './pages/Approvals';
import { ConnectionsPage } from './pages/Connections';
import { MarketplacePage } from './pages/Marketplace';
import { MemoryPage } from './pages/Memory';
import { PoliciesPage } from './pages/policies/PoliciesPage';
import { ServicesPage } from './pages/Services';
import { SubscriptionsPage } from './pages/Subscriptions';
import { TracesPage } from './pages/Traces';
import { ProblemAlert } from './ui';

const NAV = [
  { to: '/marketplace', label: 'Marketplace' },
  { to: '/services', label: 'My services' },
  { to: '/subscriptions', label: 'Subscriptions' },
  { to: '/api-keys', label: 'API keys' },
  { to: '/connections', label: 'Connected accounts' },
  { to: '/agents', label: 'Agents' },
  { to: '/policies', label: 'Policies' },
  { to: '/approvals', label: 'Approvals' },
  { to: '/memory', label: 'Memory' },
  { to: '/analytics', label: 'Analytics' },
];

export function App() {
  return (
    <AuthProvider>
      <Gate />
    </AuthProvider>
  );
}

function Gate() {
  const auth = useAuth();
  const location = useLocation();
  if (auth.status === 'loading') {
    return (
      <Center component="main" h="100vh">
        <Loader aria-label="Loading" />
      </Center>
    );
  }
  if (auth.status !== 'signed-in') {
    return (
      <Center component="main" h="100vh">
        <Stack align="center" maw={420}>
          <Title order={1}>Agent Platform</Title>
          <Text c="dimmed" ta="center">
            Tools, memory and deployed agents for your AI agents.
          </Text>
          {auth.error ? <ProblemAlert error={new Error(auth.error)} title="Sign-in failed" /> : null}
          {auth.notice ? (
            <Alert color="yellow" title="Signed out" role="alert" data-testid="session-notice">
              {auth.notice}
            </Alert>
          ) : null}
          <Button size="md" onClick={() => void startSignIn(location.pathname)}>
            Sign in
          </Button>
        </Stack>
      </Center>
    );
  }
  return <Shell />;
}

function Shell() {
  const auth = useAuth();
  const [opened, { toggle, close }] = useDisclosure();
  const location = useLocation();
  // On a phone the navigation covers the page: it closes once a page is chosen.
  // eslint-disable-next-line react-hooks/exhaustive-deps
  useEffect(() => close(), [location.pathname]);
  // The tab's title names the page (what a screen reader announces, what a bookmark is called).
  const page = NAV.find((n) => location.pathname.startsWith(n.to))?.label;
  useEffect(() => {
    document.title = page ? `${page} · Agent Platform console` : 'Agent Platform console';
  }, [page]);
  return (
    <AppShell
      header={{ height: 56 }}
      navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }}
      padding="md"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between">
          <Group>
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
            {/* The document's one h1 (each page's own title is an h2 under it). */}
            <Title order={1} size="h4">
              Agent Platform
            </Title>
          </Group>
          <Group>
            <Text size="sm" data-testid="whoami" visibleFrom="sm">
              {auth.me?.email} · {auth.me?.roles.join(', ')}
            </Text>
            <Button variant="default" size="xs" onClick={() => void auth.signOut()}>
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Main">
        {NAV.map((n) => (
          <NavLink key={n.to} component={Link} to={n.to} label={n.label} active={location.pathname.startsWith(n.to)} />
        ))}
      </AppShell.Navbar>
      {/* AppShell.Main is the page's one <main> landmark. */}
      <AppShell.Main>
        <Routes>
          <Route path="/" element={<Navigate to="/marketplace" replace />} />
          <Route path="/marketplace" element={<MarketplacePage />} />
          <Route path="/services" element={<ServicesPage />} />
          <Route path="/subscriptions" element={<SubscriptionsPage />} />
          <Route path="/api-keys" element={<ApiKeysPage />} />
          <Route path="/connections" element={<ConnectionsPage />} />
          <Route path="/agents" element={<AgentsPage />} />
          <Route path="/policies" element={<PoliciesPage />} />
          <Route path="/approvals" element={<ApprovalsPage />} />
          <Route path="/approvals/:id" element={<ApprovalsPage />} />
          <Route path="/memory" element={<MemoryPage />} />
          <Route path="/analytics" element={<AnalyticsPage />} />
          <Route path="/traces" element={<TracesPage />} />
          <Route path="/traces/:traceId" element={<TracesPage />} />
          <Route path="*" element={<Text>No such page.</Text>} />
        </Routes>
      </AppShell.Main>
    </AppShell>
  );
}
