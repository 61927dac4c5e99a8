/**
 * Generates `bench/data/memory-retrieval.json`: the labelled retrieval set of the memory benchmark
 * (`npm run bench:memory`). Deterministic (seeded PRNG): re-running it rewrites the same file.
 *
 * What is in it: one user's memories as the platform stores them — automatic execution memories
 * (the sentence format of `src/modules/memory/sentences.ts`) and explicit notes — across 30 topics,
 * several memories per topic that differ in their details (the distractors a search must get past).
 * Queries are written as a person would ask later: different words than the memory (synonyms,
 * other phrasing, other word forms), usually keeping the one detail they remember (a city, a
 * name). Each query lists the ids of the memories that answer it.
 *
 *   npx tsx bench/data/generate-memory-dataset.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(20261121);
const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
function shuffled<T>(xs: readonly T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const date = () => `2026-${String(int(1, 12)).padStart(2, '0')}-${String(int(1, 28)).padStart(2, '0')}`;
const longDate = () => `${int(1, 28)} ${pick(MONTHS)}`;
const code = (n = 6) => Array.from({ length: n }, () => 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789'[int(0, 31)]).join('');

const CITIES = ['Lisbon', 'Porto', 'Madrid', 'Seville', 'Barcelona', 'Valencia', 'Paris', 'Lyon', 'Marseille', 'Nice', 'Berlin', 'Munich', 'Hamburg', 'Cologne', 'Vienna', 'Zurich', 'Geneva', 'Milan', 'Rome', 'Naples', 'Florence', 'Venice', 'Athens', 'Prague', 'Budapest', 'Krakow', 'Warsaw', 'Copenhagen', 'Stockholm', 'Oslo', 'Helsinki', 'Dublin', 'Edinburgh', 'Amsterdam', 'Rotterdam', 'Brussels', 'Antwerp', 'Reykjavik', 'Tallinn', 'Riga'];
const PEOPLE = ['Maria Santos', 'John Carter', 'Aiko Tanaka', 'Lars Nilsson', 'Fatima Zahra', 'Diego Alvarez', 'Priya Raman', 'Tom Becker', 'Chloe Martin', 'Omar Haddad', 'Elena Petrova', 'Lucas Moreau', 'Hannah Weiss', 'Kenji Mori', 'Sofia Rossi', 'Noah Fischer', 'Amara Okafor', 'Mateo Silva', 'Ingrid Berg', 'Ravi Patel', 'Zoe Clarke', 'Yusuf Demir', 'Clara Jensen', 'Felix Wagner', 'Leila Nasser', 'Paulo Costa', 'Greta Larsen', 'Samuel Reyes', 'Mei Chen', 'Anton Novak'];
const COMPANIES = ['Acme Logistics', 'Brightwave Media', 'Northwind Traders', 'Globex Energy', 'Initech Software', 'Umbrella Health', 'Stark Robotics', 'Wayne Foods', 'Hooli Cloud', 'Vandelay Imports', 'Soylent Farms', 'Cyberdyne Labs', 'Tyrell Genetics', 'Wonka Confectionery', 'Oceanic Airlines', 'Pied Piper Storage', 'Massive Dynamic', 'Aperture Optics', 'Blue Sun Mining', 'Monarch Textiles'];

interface Memory {
  id: string;
  topic: string;
  content: string;
}
interface Query {
  id: string;
  topic: string;
  text: string;
  relevant: string[];
}
const memories: Memory[] = [];
const queries: Query[] = [];

/**
 * A topic: `n` instances of `slots()`, each rendered by one of the memory templates; `asks` are
 * paraphrased questions, each applied to one (different) instance.
 */
function topic<S>(name: string, n: number, slots: (i: number) => S, templates: Array<(s: S) => string>, asks: Array<(s: S) => string>): void {
  const inst: Array<{ s: S; id: string }> = [];
  for (let i = 0; i < n; i++) {
    const s = slots(i);
    const id = `m${String(memories.length + 1).padStart(3, '0')}`;
    memories.push({ id, topic: name, content: templates[i % templates.length](s) });
    inst.push({ s, id });
  }
  const targets = shuffled(inst);
  asks.forEach((ask, k) => {
    const t = targets[k % targets.length];
    queries.push({ id: `q${String(queries.length + 1).padStart(2, '0')}`, topic: name, text: ask(t.s), relevant: [t.id] });
  });
}

/** Draw `n` distinct values of `pool` for a topic's key slot. */
function keys<T>(pool: readonly T[], n: number): T[] {
  return shuffled(pool).slice(0, n);
}

// 1 flights
{
  const dest = keys(CITIES, 12);
  const airlines = ['TAP', 'Iberia', 'Lufthansa', 'Air France', 'KLM', 'easyJet', 'Ryanair', 'SAS', 'Finnair', 'ITA Airways'];
  topic(
    'flights',
    12,
    (i) => ({ from: pick(['BER', 'FRA', 'MUC', 'AMS', 'CDG', 'LHR']), to: dest[i], date: date(), n: int(2, 9), airline: pick(airlines), price: int(59, 480) }),
    [
      (s) => `Called search_flights on skyscanner-api with origin "${s.from}", destination "${s.to}", date "${s.date}" — succeeded (412 ms, HTTP 200): ${s.n} flights; first: airline "${s.airline}", price ${s.price}, stops 0.`,
      (s) => `Compared flights to ${s.to} for ${s.date}: ${s.airline} was cheapest at ${s.price} EUR one way, ${s.n} alternatives with a stopover.`,
    ],
    [(s) => `which airfares did I look at for travelling to ${s.to}?`, (s) => `cheapest plane ticket found for the ${s.to} trip`, (s) => `what did the airline quotes to ${s.to} cost`],
  );
}
// 2 hotels
{
  const cities = keys(CITIES, 11);
  const hotels = ['Hotel Aurora', 'Grand Palace', 'Riverside Inn', 'The Old Mill', 'Harbour View', 'Casa Verde', 'Hotel Central', 'Park Lodge', 'Sunset Suites', 'Maison Blanche', 'Alpine Rest'];
  topic(
    'hotels',
    11,
    (i) => ({ city: cities[i], hotel: hotels[i], nights: int(1, 6), in: date(), code: code(), price: int(90, 1400) }),
    [
      (s) => `Called book_hotel on booking-api with city "${s.city}", check in "${s.in}", nights ${s.nights} — succeeded (980 ms, HTTP 201): confirmation "${s.code}", hotel "${s.hotel}", total ${s.price}.`,
      (s) => `Reserved ${s.nights} nights at ${s.hotel} in ${s.city} from ${s.in}; booking reference ${s.code}, paid ${s.price} EUR.`,
    ],
    [(s) => `where am I staying when I visit ${s.city}?`, (s) => `accommodation reservation number for ${s.city}`],
  );
}
// 3 weather
{
  const cities = keys(CITIES, 11);
  const cond = ['light rain', 'sunny', 'thunderstorms', 'heavy snow', 'fog in the morning', 'strong wind', 'overcast', 'scattered showers', 'heatwave', 'clear skies', 'sleet'];
  topic(
    'weather',
    11,
    (i) => ({ city: cities[i], cond: cond[i], hi: int(-5, 38) }),
    [
      (s) => `Called get_forecast on weather-api with location "${s.city}", days 3 — succeeded (120 ms, HTTP 200): 3 days; first: summary "${s.cond}", high ${s.hi}.`,
      (s) => `Checked the forecast for ${s.city}: ${s.cond} expected, highs around ${s.hi} °C.`,
    ],
    [(s) => `what's the weather outlook in ${s.city}`, (s) => `will I need an umbrella or a coat in ${s.city}? temperature forecast`],
  );
}
// 4 github issues
{
  const repos = ['acme/api', 'acme/web', 'acme/mobile', 'acme/billing', 'acme/search', 'acme/infra', 'acme/docs', 'acme/auth', 'acme/worker', 'acme/cli', 'acme/analytics'];
  const titles: Array<[string, string]> = [
    ['Memory leak in worker pool', 'RAM usage keeps growing in the worker threads'],
    ['Login page crashes on Safari', 'sign-in screen breaks in Apple browser'],
    ['Invoice totals rounded incorrectly', 'wrong rounding of bill amounts'],
    ['Search returns stale results', 'outdated hits coming back from the search'],
    ['Timeout when uploading large files', 'big uploads time out'],
    ['Dark mode colors unreadable', 'night theme contrast problem'],
    ['Push notifications arrive twice', 'duplicate mobile alerts'],
    ['CSV export drops unicode characters', 'spreadsheet download loses accented letters'],
    ['Rate limiter blocks healthy clients', 'throttling rejects legitimate callers'],
    ['Docs links point to 404 pages', 'broken links in the documentation'],
    ['Cron job runs twice after DST change', 'scheduled task duplicated when clocks changed'],
  ];
  topic(
    'github',
    11,
    (i) => ({ repo: repos[i], title: titles[i][0], para: titles[i][1], n: int(100, 2400) }),
    [
      (s) => `Called create_issue on github with repo "${s.repo}", title "${s.title}" — succeeded (640 ms, HTTP 201): number ${s.n}, state "open", url "https://github.com/${s.repo}/issues/${s.n}".`,
      (s) => `Opened GitHub issue #${s.n} in ${s.repo}: "${s.title}".`,
    ],
    [(s) => `the ticket I filed about ${s.para}`, (s) => `issue number for the ${s.para} bug`, (s) => `did I report that ${s.para}?`],
  );
}
// 5 preferences
{
  const prefs: Array<[string, string]> = [
    ['prefers aisle seats on long-haul flights', 'which seat do I like on planes'],
    ['is vegetarian and does not eat fish', 'dietary restrictions for meals'],
    ['wants meetings scheduled after 10:00 only', 'earliest time I accept calls'],
    ['likes hotels within walking distance of the old town', 'preferred location for lodging'],
    ['prefers dark mode in every application', 'UI theme setting I like'],
    ['uses metric units for distances and temperatures', 'kilometers or miles?'],
    ['wants invoices sent as PDF to the finance mailbox', 'how should bills be delivered'],
    ['prefers trains over planes for trips under 600 km', 'rail versus flying for shorter journeys'],
    ['writes code reviews in English even with German teams', 'language for review comments'],
    ['drinks oat milk in coffee, no sugar', 'how do I take my coffee'],
    ['likes window tables in quiet restaurants', 'seating choice when dining out'],
  ];
  topic(
    'preferences',
    11,
    (i) => ({ p: prefs[i][0], q: prefs[i][1] }),
    [(s) => `The user ${s.p}.`, (s) => `Preference noted: the user ${s.p}.`],
    [(s) => s.q, (s) => `remind me: ${s.q}`],
  );
}
// 6 calendar
{
  const people = keys(PEOPLE, 11);
  const titles = ['Quarterly planning', 'Design review', 'Budget sync', 'Hiring debrief', 'Customer demo', 'Architecture deep dive', 'One-on-one', 'Roadmap workshop', 'Security audit kickoff', 'Launch retrospective', 'Vendor negotiation'];
  topic(
    'calendar',
    11,
    (i) => ({ who: people[i], title: titles[i], when: `${date()}T${String(int(9, 17)).padStart(2, '0')}:00` }),
    [
      (s) => `Called create_event on google-calendar with title "${s.title}", start "${s.when}", attendees "${s.who}" — succeeded (300 ms, HTTP 200): event id "${code(10).toLowerCase()}", status "confirmed".`,
      (s) => `Scheduled "${s.title}" with ${s.who} on ${s.when.replace('T', ' at ')}.`,
    ],
    [(s) => `when am I meeting ${s.who.split(' ')[0]}?`, (s) => `appointment set up with ${s.who}`],
  );
}
// 7 email
{
  const people = keys(PEOPLE, 11);
  const subjects: Array<[string, string]> = [
    ['Contract renewal for 2027', 'extending the agreement next year'],
    ['Overdue invoice reminder', 'unpaid bill'],
    ['Interview feedback', 'how the candidate did'],
    ['Conference travel approval', 'permission to go to the summit'],
    ['Server migration schedule', 'moving the machines to new hosting'],
    ['Press release draft', 'announcement text for journalists'],
    ['Office move logistics', 'relocating to the new building'],
    ['Quarterly sales numbers', 'revenue figures for the quarter'],
    ['Vacation handover notes', 'what to cover while I am on holiday'],
    ['Security incident report', 'the breach write-up'],
    ['Partnership proposal', 'teaming up offer'],
  ];
  topic(
    'email',
    11,
    (i) => ({ who: people[i], subj: subjects[i][0], para: subjects[i][1] }),
    [
      (s) => `Called send_email on gmail with to "${s.who.toLowerCase().replace(' ', '.')}@example.com", subject "${s.subj}" — succeeded (510 ms, HTTP 200): id "${code(12).toLowerCase()}", label ids SENT.`,
      (s) => `Emailed ${s.who} about "${s.subj}".`,
    ],
    [(s) => `did I write to ${s.who.split(' ')[0]} regarding the ${s.para}?`, (s) => `message sent about ${s.para}`],
  );
}
// 8 stocks
{
  const stocks: Array<[string, string]> = [
    ['AAPL', 'Apple'], ['MSFT', 'Microsoft'], ['NVDA', 'Nvidia'], ['TSLA', 'Tesla'], ['AMZN', 'Amazon'], ['GOOGL', 'Alphabet'], ['META', 'Meta Platforms'], ['SAP', 'SAP'], ['ASML', 'ASML Holding'], ['NFLX', 'Netflix'], ['ADBE', 'Adobe'],
  ];
  topic(
    'stocks',
    11,
    (i) => ({ sym: stocks[i][0], name: stocks[i][1], price: (int(2000, 90000) / 100).toFixed(2), ch: (int(-600, 600) / 100).toFixed(2) }),
    [
      (s) => `Called get_quote on market-data with symbol "${s.sym}" — succeeded (95 ms, HTTP 200): name "${s.name}", price ${s.price}, change percent ${s.ch}, currency "USD".`,
      (s) => `${s.name} (${s.sym}) traded at ${s.price} USD, ${Number(s.ch) >= 0 ? 'up' : 'down'} ${Math.abs(Number(s.ch))}% on the day.`,
    ],
    [(s) => `how were ${s.name} shares doing`, (s) => `share price of ${s.name} that I checked`],
  );
}
// 9 payments (failures and successes)
{
  const amounts = shuffled([19, 49, 99, 129, 250, 480, 720, 999, 1200, 3500, 75]);
  const merchants = keys(COMPANIES, 11);
  topic(
    'payments',
    11,
    (i) => ({ amount: amounts[i], merchant: merchants[i], ok: i % 3 !== 0 }),
    [
      (s) =>
        s.ok
          ? `Called charge_card on stripe with amount ${s.amount}, currency "eur", description "${s.merchant} subscription" — succeeded (820 ms, HTTP 200): id "ch_${code(10).toLowerCase()}", status "succeeded".`
          : `Called charge_card on stripe with amount ${s.amount}, currency "eur", description "${s.merchant} subscription" — failed (30000 ms) with upstream_timeout: The upstream did not answer within 30 s.`,
    ],
    [(s) => `${s.ok ? 'card payment' : 'charge that timed out'} for the ${s.merchant} plan`, (s) => `billing attempt of ${s.amount} euros`],
  );
}
// 10 deployments
{
  const services = ['checkout-service', 'search-api', 'billing-worker', 'auth-gateway', 'notification-hub', 'image-resizer', 'report-builder', 'inventory-sync', 'pricing-engine', 'user-profile', 'feature-flags'];
  topic(
    'deployments',
    11,
    (i) => ({ svc: services[i], v: `${int(1, 5)}.${int(0, 20)}.${int(0, 9)}`, env: pick(['production', 'staging']), d: longDate() }),
    [
      (s) => `Deployed ${s.svc} version ${s.v} to ${s.env} on ${s.d}; smoke tests passed.`,
      (s) => `Release ${s.v} of ${s.svc} went out to ${s.env} on ${s.d} after the canary looked healthy.`,
    ],
    [(s) => `when was the latest ${s.svc} rollout`, (s) => `which build of ${s.svc} is live`],
  );
}
// 11 translation
{
  const items: Array<[string, string, string, string]> = [
    ['Where is the train station?', 'pt', 'Portuguese', 'Onde fica a estação de comboios?'],
    ['I would like the bill, please', 'fr', 'French', "Je voudrais l'addition, s'il vous plaît"],
    ['Is breakfast included?', 'es', 'Spanish', '¿El desayuno está incluido?'],
    ['My luggage is lost', 'de', 'German', 'Mein Gepäck ist verloren gegangen'],
    ['Can you call a taxi?', 'it', 'Italian', 'Può chiamare un taxi?'],
    ['I am allergic to peanuts', 'nl', 'Dutch', 'Ik ben allergisch voor pinda’s'],
    ['How much does this cost?', 'pl', 'Polish', 'Ile to kosztuje?'],
    ['Thank you for your help', 'sv', 'Swedish', 'Tack för din hjälp'],
    ['The meeting is postponed', 'da', 'Danish', 'Mødet er udsat'],
    ['Please speak more slowly', 'cs', 'Czech', 'Mluvte prosím pomaleji'],
    ['Good morning, everyone', 'fi', 'Finnish', 'Hyvää huomenta kaikille'],
  ];
  topic(
    'translation',
    11,
    (i) => ({ text: items[i][0], lang: items[i][1], name: items[i][2], out: items[i][3] }),
    [(s) => `Called translate on deepl with text "${s.text}", target lang "${s.lang}" — succeeded (210 ms, HTTP 200): translation "${s.out}", detected source lang "en".`],
    [(s) => `how do you say "${s.text.toLowerCase().replace(/[?!.,]/g, '')}" in ${s.name}`, (s) => `${s.name} phrase I had translated`],
  );
}
// 12 allergies / people facts
{
  const people = keys(PEOPLE, 11);
  const facts: Array<[string, string]> = [
    ['is allergic to shellfish', 'seafood allergy'],
    ['cannot eat gluten', 'wheat intolerance'],
    ['is lactose intolerant', 'dairy problem'],
    ['has a peanut allergy', 'nut reaction'],
    ['avoids caffeine after noon', 'coffee in the afternoon'],
    ['is training for the Berlin marathon', 'long-distance race preparation'],
    ['is moving to Canada in spring', 'relocation abroad'],
    ['speaks fluent Japanese', 'languages spoken'],
    ['has two kids in primary school', 'children'],
    ['is learning to play the cello', 'music lessons'],
    ['volunteers at the animal shelter on Saturdays', 'weekend charity work'],
  ];
  topic(
    'people',
    11,
    (i) => ({ who: people[i], fact: facts[i][0], para: facts[i][1] }),
    [(s) => `${s.who} ${s.fact}.`, (s) => `Remember that ${s.who} ${s.fact}.`],
    [(s) => `what should I know about ${s.who.split(' ')[0]}'s ${s.para}`, (s) => `${s.para} — who was that?`],
  );
}
// 13 CRM contacts
{
  const people = keys(PEOPLE, 11);
  const companies = keys(COMPANIES, 11);
  topic(
    'crm',
    11,
    (i) => ({ who: people[i], co: companies[i], stage: pick(['lead', 'qualified', 'proposal', 'negotiation']) }),
    [
      (s) => `Called create_contact on hubspot with name "${s.who}", company "${s.co}", lifecycle stage "${s.stage}" — succeeded (430 ms, HTTP 201): id "${int(10000, 99999)}".`,
      (s) => `Added ${s.who} of ${s.co} to the CRM as a ${s.stage}.`,
    ],
    [(s) => `the prospect from ${s.co} I entered into HubSpot`, (s) => `who is our contact person at ${s.co}?`],
  );
}
// 14 analytics queries
{
  const tables: Array<[string, string]> = [
    ['orders', 'purchases'], ['signups', 'new registrations'], ['refunds', 'money returned to customers'], ['page_views', 'website visits'], ['support_tickets', 'help desk requests'], ['cart_abandons', 'abandoned shopping carts'], ['api_errors', 'failed API calls'], ['subscriptions', 'active plans'], ['trial_starts', 'free trials begun'], ['churned_users', 'customers who left'], ['invoices', 'billing documents'],
  ];
  topic(
    'analytics',
    11,
    (i) => ({ t: tables[i][0], para: tables[i][1], n: int(12, 98000), period: pick(['last week', 'yesterday', 'in October', 'this quarter']) }),
    [
      (s) => `Called run_query on analytics-db with sql "select count(*) from ${s.t} where created_at > now() - interval '7 days'" — succeeded (1340 ms, HTTP 200): 1 row; first: count ${s.n}.`,
      (s) => `There were ${s.n} ${s.t.replace('_', ' ')} ${s.period} according to the analytics database.`,
    ],
    [(s) => `how many ${s.para} did the warehouse report`, (s) => `count of ${s.para}`],
  );
}
// 15 currency
{
  const pairs: Array<[string, string, string, string]> = [
    ['EUR', 'USD', 'euros', 'dollars'], ['GBP', 'EUR', 'pounds', 'euros'], ['USD', 'JPY', 'dollars', 'yen'], ['EUR', 'CHF', 'euros', 'Swiss francs'], ['SEK', 'EUR', 'Swedish kronor', 'euros'], ['EUR', 'PLN', 'euros', 'zloty'],
    ['USD', 'CAD', 'US dollars', 'Canadian dollars'], ['AUD', 'USD', 'Australian dollars', 'US dollars'], ['EUR', 'CZK', 'euros', 'Czech koruna'], ['NOK', 'EUR', 'Norwegian krone', 'euros'], ['EUR', 'HUF', 'euros', 'forint'],
  ];
  topic(
    'currency',
    11,
    (i) => ({ a: pairs[i][0], b: pairs[i][1], an: pairs[i][2], bn: pairs[i][3], amt: int(10, 5000), rate: (int(50, 20000) / 1000).toFixed(4) }),
    [(s) => `Called convert on fx-api with from "${s.a}", to "${s.b}", amount ${s.amt} — succeeded (80 ms, HTTP 200): rate ${s.rate}, result ${(s.amt * Number(s.rate)).toFixed(2)}.`],
    [(s) => `exchange rate from ${s.an} to ${s.bn}`, (s) => `what were ${s.amt} ${s.an} worth in ${s.bn}`],
  );
}
// 16 npm packages
{
  const needs: Array<[string, string, string]> = [
    ['date formatting', 'date-fns', 'handling calendar dates'], ['pdf generation', 'pdfkit', 'making PDF documents'], ['csv parsing', 'papaparse', 'reading comma separated files'], ['image resizing', 'sharp', 'shrinking pictures'],
    ['http client', 'undici', 'making web requests'], ['schema validation', 'ajv', 'checking JSON against a schema'], ['markdown rendering', 'marked', 'turning markdown into HTML'], ['job queue', 'bullmq', 'background task processing'],
    ['rate limiting', 'bottleneck', 'throttling calls'], ['excel export', 'exceljs', 'writing spreadsheets'], ['qr codes', 'qrcode', 'generating QR images'],
  ];
  topic(
    'packages',
    11,
    (i) => ({ q: needs[i][0], pkg: needs[i][1], para: needs[i][2], v: `${int(1, 9)}.${int(0, 30)}.${int(0, 9)}` }),
    [(s) => `Called search_packages on npm-registry with query "${s.q}" — succeeded (260 ms, HTTP 200): 20 packages; first: name "${s.pkg}", version "${s.v}", weekly downloads ${int(10000, 9000000)}.`],
    [(s) => `which library did I find for ${s.para}`, (s) => `node module recommendation for ${s.para}`],
  );
}
// 17 customer complaints
{
  const people = keys(PEOPLE, 11);
  const companies = keys(COMPANIES, 11);
  const problems: Array<[string, string]> = [
    ['exports fail for reports over 10 MB', 'large report downloads break'],
    ['the mobile app logs them out every hour', 'sessions expire on the phone'],
    ['invoices show the wrong VAT rate', 'tax on bills is incorrect'],
    ['webhooks arrive out of order', 'event callbacks are misordered'],
    ['search is slow on Monday mornings', 'lookup performance at the start of the week'],
    ['SSO login loops back to the start page', 'single sign-on redirect loop'],
    ['the dashboard charts are empty', 'graphs show no data'],
    ['password reset emails never arrive', 'cannot recover their account'],
    ['API keys expire without warning', 'credentials stop working suddenly'],
    ['uploads of HEIC photos are rejected', 'iPhone pictures cannot be uploaded'],
    ['the monthly bill was charged twice', 'double billing'],
  ];
  topic(
    'complaints',
    11,
    (i) => ({ who: people[i], co: companies[i], p: problems[i][0], para: problems[i][1], d: longDate() }),
    [(s) => `Customer ${s.who} from ${s.co} reported that ${s.p}; promised a fix by ${s.d}.`, (s) => `Support case: ${s.co} says ${s.p}. Contact: ${s.who}.`],
    [(s) => `which client complained that ${s.para}?`, (s) => `the ${s.co} support issue`],
  );
}
// 18 reminders
{
  const tasks: Array<[string, string, string]> = [
    ['water the plants', 'every Sunday', 'watering'], ['back up the laptop', 'on the first of each month', 'backups'], ['renew the domain names', 'every year in March', 'domain renewal'],
    ['submit the expense report', 'every Friday', 'expenses'], ['rotate the API credentials', 'every 90 days', 'key rotation'], ['call grandma', 'every Wednesday evening', 'family call'],
    ['review the on-call schedule', 'every two weeks', 'on-call rota'], ['pay the rent', 'on the 25th', 'rent'], ['check the smoke detectors', 'twice a year', 'fire alarm'], ['update the team OKRs', 'every quarter', 'objectives'], ['take the car for service', 'every 15000 km', 'car maintenance'],
  ];
  topic(
    'reminders',
    11,
    (i) => ({ t: tasks[i][0], when: tasks[i][1], para: tasks[i][2] }),
    [(s) => `Remind the user to ${s.t} ${s.when}.`, (s) => `Recurring reminder set: ${s.t}, ${s.when}.`],
    [(s) => `how often is the ${s.para} reminder`, (s) => `the recurring note about ${s.para}`],
  );
}
// 19 restaurants
{
  const rest = ['Taberna do Mar', 'Le Petit Zinc', 'Trattoria Roma', 'Sushi Kaito', 'The Green Fork', 'El Rincón', 'Bistro Nord', 'Curry House', 'Mezze Garden', 'Steak & Co', 'Noodle Bar Ichi'];
  topic(
    'restaurants',
    11,
    (i) => ({ r: rest[i], n: int(2, 8), t: `${date()} ${int(18, 21)}:30`, code: code() }),
    [
      (s) => `Called reserve_table on opentable with restaurant "${s.r}", party size ${s.n}, time "${s.t}" — succeeded (700 ms, HTTP 201): confirmation "${s.code}".`,
      (s) => `Booked a table for ${s.n} at ${s.r} on ${s.t}; confirmation ${s.code}.`,
    ],
    [(s) => `dinner reservation at ${s.r}`, (s) => `how many people is the ${s.r} booking for`],
  );
}
// 20 parcels
{
  const cities = keys(CITIES, 11);
  const statuses = ['in transit', 'held at customs', 'out for delivery', 'delivered', 'delayed by weather', 'returned to sender', 'awaiting pickup', 'in transit', 'held at customs', 'out for delivery', 'delayed by weather'];
  topic(
    'parcels',
    11,
    (i) => ({ city: cities[i], status: statuses[i], tn: `JD${int(100000000, 999999999)}`, eta: date() }),
    [(s) => `Called track_package on dhl with tracking number "${s.tn}" — succeeded (330 ms, HTTP 200): status "${s.status}", location "${s.city}", eta "${s.eta}".`],
    [(s) => `the shipment sitting in ${s.city}`, (s) => `delivery status of the package last seen in ${s.city}`],
  );
}
// 21 code review
{
  const repos = ['acme/api', 'acme/web', 'acme/mobile', 'acme/billing', 'acme/search', 'acme/infra', 'acme/auth', 'acme/worker', 'acme/cli', 'acme/analytics', 'acme/docs'];
  const comments: Array<[string, string]> = [
    ['the retry loop needs a jittered backoff', 'exponential delay with randomness'],
    ['SQL is built by string concatenation, use parameters', 'injection risk in queries'],
    ['missing tests for the refund path', 'no test coverage on refunds'],
    ['the migration locks the orders table for minutes', 'schema change blocks writes'],
    ['secrets are printed in debug logs', 'credentials leaking into logging'],
    ['the cache never expires entries', 'unbounded cache growth'],
    ['pagination skips items when two share a timestamp', 'paging loses rows with equal times'],
    ['error messages leak stack traces to clients', 'internal details exposed in errors'],
    ['the feature flag defaults to on in production', 'toggle enabled by default'],
    ['the date parser ignores time zones', 'timezone handling bug'],
    ['README instructions are out of date', 'stale setup guide'],
  ];
  topic(
    'reviews',
    11,
    (i) => ({ repo: repos[i], n: int(10, 900), c: comments[i][0], para: comments[i][1] }),
    [(s) => `Code review of PR #${s.n} in ${s.repo}: ${s.c}.`, (s) => `Requested changes on ${s.repo} pull request ${s.n} because ${s.c}.`],
    [(s) => `which pull request had the ${s.para} problem`, (s) => `review feedback about ${s.para}`],
  );
}
// 22 jobs / people
{
  const people = keys(PEOPLE, 11);
  const jobs = ['a data engineer', 'a product manager', 'an ICU nurse', 'a patent lawyer', 'a high-school teacher', 'an architect', 'a pastry chef', 'a pilot', 'a UX researcher', 'an accountant', 'a journalist'];
  const cities = keys(CITIES, 11);
  const companies = keys(COMPANIES, 11);
  topic(
    'jobs',
    11,
    (i) => ({ who: people[i], job: jobs[i], city: cities[i], co: companies[i] }),
    [(s) => `${s.who} works as ${s.job} at ${s.co} and lives in ${s.city}.`, (s) => `${s.who}: ${s.job} (${s.co}), based in ${s.city}.`],
    [(s) => `what does ${s.who.split(' ')[0]} ${s.who.split(' ')[1]} do for a living`, (s) => `who do I know that lives in ${s.city}?`],
  );
}
// 23 sports
{
  const teams = ['Benfica', 'Porto FC', 'Real Madrid', 'Bayern Munich', 'Ajax', 'Celtic', 'Juventus', 'Olympique Lyon', 'Sparta Prague', 'Galatasaray', 'Rosenborg'];
  topic(
    'sports',
    11,
    (i) => ({ team: teams[i], opp: pick(teams.filter((t) => t !== teams[i])), a: int(0, 4), b: int(0, 4) }),
    [(s) => `Called get_score on sports-api with team "${s.team}" — succeeded (150 ms, HTTP 200): last match; first: opponent "${s.opp}", score "${s.a}-${s.b}", competition "league".`],
    [(s) => `result of the latest ${s.team} game`, (s) => `how did ${s.team} play last time`],
  );
}
// 24 directions
{
  const pairs = shuffled(CITIES).slice(0, 22);
  const modes: Array<[string, string]> = [['driving', 'by car'], ['transit', 'by public transport'], ['bicycling', 'by bike'], ['walking', 'on foot']];
  topic(
    'directions',
    11,
    (i) => {
      const m = pick(modes);
      return { a: pairs[2 * i], b: pairs[2 * i + 1], mode: m[0], para: m[1], km: int(3, 900), min: int(15, 700) };
    },
    [(s) => `Called get_directions on maps-api with origin "${s.a}", destination "${s.b}", mode "${s.mode}" — succeeded (240 ms, HTTP 200): distance km ${s.km}, duration min ${s.min}.`],
    [(s) => `how long is the journey ${s.para} from ${s.a} to ${s.b}`, (s) => `route between ${s.a} and ${s.b}`],
  );
}
// 25 expenses
{
  const merchants = ['IKEA', 'Apple Store', 'Deutsche Bahn', 'Uber', 'Amazon', 'Decathlon', 'Lidl', 'Shell', 'Zara', 'MediaMarkt', 'Starbucks'];
  const cats: Array<[string, string]> = [['furniture', 'home furnishing'], ['electronics', 'gadgets'], ['train tickets', 'rail travel'], ['taxi rides', 'ride hailing'], ['books', 'reading material'], ['sports gear', 'fitness equipment'], ['groceries', 'food shopping'], ['fuel', 'petrol'], ['clothing', 'apparel'], ['a new monitor', 'computer screen'], ['coffee', 'espresso drinks']];
  topic(
    'expenses',
    11,
    (i) => ({ m: merchants[i], cat: cats[i][0], para: cats[i][1], amt: (int(300, 90000) / 100).toFixed(2), d: longDate() }),
    [(s) => `Spent ${s.amt} EUR on ${s.cat} at ${s.m} on ${s.d}.`, (s) => `Expense logged: ${s.m}, ${s.amt} EUR (${s.cat}), ${s.d}.`],
    [(s) => `how much did I pay at ${s.m}`, (s) => `money spent on ${s.para}`],
  );
}
// 26 runs
{
  const routes: Array<[string, string]> = [
    ['the river promenade', 'along the water'], ['the city park loop', 'around the park'], ['the hill trail', 'uphill path'], ['the harbour', 'by the docks'], ['the old railway path', 'former train line'],
    ['the forest track', 'through the woods'], ['the stadium track', 'athletics oval'], ['the beach boardwalk', 'by the sea'], ['the canal towpath', 'beside the canal'], ['the castle hill', 'up to the fortress'], ['the university campus', 'around the college'],
  ];
  topic(
    'runs',
    11,
    (i) => ({ r: routes[i][0], para: routes[i][1], km: int(3, 25), min: int(15, 140) }),
    [(s) => `Logged a ${s.km} km run in ${s.min} minutes along ${s.r}.`, (s) => `Workout: ran ${s.km} km (${s.min} min) on ${s.r}.`],
    [(s) => `my jog ${s.para}`, (s) => `distance I covered running ${s.para}`],
  );
}
// 27 books
{
  const books: Array<[string, string, string, string]> = [
    ['Thinking, Fast and Slow', 'Kahneman', 'two systems of thought shape judgement', 'intuition versus deliberate reasoning'],
    ['Designing Data-Intensive Applications', 'Kleppmann', 'replication lag must be designed for', 'copies of data falling behind'],
    ['The Pragmatic Programmer', 'Hunt and Thomas', 'tracer bullets beat big up-front design', 'building a thin end-to-end slice first'],
    ['Deep Work', 'Newport', 'focus is a trainable skill', 'concentration can be practiced'],
    ['Sapiens', 'Harari', 'shared myths enable large-scale cooperation', 'common stories let strangers work together'],
    ['Atomic Habits', 'Clear', 'small habits compound over time', 'tiny routines adding up'],
    ['The Mythical Man-Month', 'Brooks', 'adding people to a late project makes it later', 'more staff slows a delayed effort'],
    ['Site Reliability Engineering', 'Beyer et al.', 'error budgets balance speed and stability', 'allowed unreliability to trade off velocity'],
    ['Range', 'Epstein', 'generalists thrive in wicked domains', 'broad experience beats early specialisation'],
    ['The Phoenix Project', 'Kim', 'unplanned work is the silent killer', 'firefighting eats capacity'],
    ['Clean Architecture', 'Martin', 'dependencies should point inward', 'inner layers not knowing outer ones'],
  ];
  topic(
    'books',
    11,
    (i) => ({ t: books[i][0], a: books[i][1], idea: books[i][2], para: books[i][3], ch: int(2, 14) }),
    [(s) => `Finished chapter ${s.ch} of "${s.t}" by ${s.a}; key idea: ${s.idea}.`],
    [(s) => `notes from the ${s.a} book`, (s) => `which book said ${s.para}?`],
  );
}
// 28 incidents
{
  const services = ['payments-api', 'login-service', 'search-cluster', 'email-relay', 'cdn-edge', 'orders-db', 'websocket-gateway', 'media-storage', 'scheduler', 'metrics-pipeline', 'recommendation-engine'];
  const causes: Array<[string, string, string]> = [
    ['error rate spiked to 40%', 'an expired TLS certificate', 'certificate ran out'],
    ['p99 latency reached 9 seconds', 'a missing database index', 'slow query without index'],
    ['all requests returned 503', 'a bad config push', 'wrong configuration deployed'],
    ['messages were delayed by an hour', 'a full disk on the queue broker', 'storage ran out of space'],
    ['images failed to load in Asia', 'a DNS misconfiguration', 'name resolution mistake'],
    ['writes were rejected', 'connection pool exhaustion', 'too many open connections'],
    ['clients kept reconnecting', 'a memory leak after the upgrade', 'RAM leaking since the update'],
    ['uploads were corrupted', 'a race condition in the chunk writer', 'concurrency bug'],
    ['jobs ran twice', 'clock skew between nodes', 'servers disagreeing about time'],
    ['dashboards went blank', 'a schema change in the event stream', 'incompatible message format'],
    ['recommendations were empty', 'a failed model rollout', 'broken ML deployment'],
  ];
  topic(
    'incidents',
    11,
    (i) => ({ svc: services[i], sym: causes[i][0], cause: causes[i][1], para: causes[i][2], d: longDate() }),
    [(s) => `Incident on ${s.svc} (${s.d}): ${s.sym}; root cause was ${s.cause}.`, (s) => `Postmortem for ${s.svc}: ${s.sym} because of ${s.cause}.`],
    [(s) => `why did ${s.svc} go down`, (s) => `the outage caused by ${s.para}`],
  );
}
// 29 infrastructure config
{
  const services = ['checkout', 'catalog', 'identity', 'ledger', 'telemetry', 'chat', 'maps', 'pricing', 'reviews', 'shipping', 'loyalty'];
  const regions = ['eu-west-1', 'eu-central-1', 'us-east-1', 'us-west-2', 'ap-southeast-1', 'eu-north-1', 'ca-central-1', 'sa-east-1', 'ap-northeast-1', 'eu-south-1', 'me-central-1'];
  const regionNames: Record<string, string> = {
    'eu-west-1': 'Ireland', 'eu-central-1': 'Frankfurt', 'us-east-1': 'Virginia', 'us-west-2': 'Oregon', 'ap-southeast-1': 'Singapore', 'eu-north-1': 'Stockholm', 'ca-central-1': 'Canada', 'sa-east-1': 'São Paulo', 'ap-northeast-1': 'Tokyo', 'eu-south-1': 'Milan', 'me-central-1': 'UAE',
  };
  topic(
    'infrastructure',
    11,
    (i) => ({ svc: services[i], env: pick(['production', 'staging']), db: pick(['PostgreSQL 16', 'MySQL 8', 'DynamoDB', 'Redis 7']), region: regions[i], rn: regionNames[regions[i]] }),
    [(s) => `The ${s.env} environment of ${s.svc} uses ${s.db} in region ${s.region} (${s.rn}).`],
    [(s) => `which region hosts the ${s.svc} database`, (s) => `what data store backs ${s.svc}`],
  );
}
// 30 summaries of sessions
{
  const goals: Array<[string, string]> = [
    ['planning a weekend in Porto', 'short trip to Porto'],
    ['debugging the checkout timeout', 'fixing slow payments at checkout'],
    ['preparing the board meeting deck', 'slides for the directors'],
    ['migrating CI to GitHub Actions', 'moving the build pipeline'],
    ['comparing CRM vendors', 'evaluating customer-relationship tools'],
    ['onboarding the new designer', 'welcoming a UI hire'],
    ['researching solar panels for the house', 'rooftop photovoltaics'],
    ['organising the team offsite in Lisbon', 'company retreat'],
    ['cleaning up unused cloud resources', 'cutting the AWS bill'],
    ['writing the grant application', 'funding proposal'],
    ['choosing a new laptop', 'buying a computer'],
  ];
  topic(
    'sessions',
    11,
    (i) => ({ goal: goals[i][0], para: goals[i][1], n: int(3, 25), f: int(0, 3) }),
    [(s) => `Session "${s.goal}" made ${s.n} tool calls; ${s.n - s.f} succeeded and ${s.f} failed. Most notable: the final shortlist was saved.`],
    [(s) => `summary of the session about ${s.para}`],
  );
}

// Cross-topic questions (several relevant memories).
{
  const cityCounts = new Map<string, string[]>();
  for (const m of memories) for (const c of CITIES) if (new RegExp(`\\b${c}\\b`).test(m.content)) cityCounts.set(c, [...(cityCounts.get(c) ?? []), m.id]);
  const multi = [...cityCounts.entries()].filter(([, ids]) => ids.length >= 3 && ids.length <= 5).slice(0, 6);
  for (const [city, ids] of multi) queries.push({ id: `q${String(queries.length + 1).padStart(2, '0')}`, topic: 'cross', text: `everything I have noted about ${city}`, relevant: ids });
}

const out = {
  description:
    'Labelled retrieval set for bench/memory.ts: memories of one user (automatic execution memories and explicit notes) and paraphrased questions with the ids of the memories that answer them. Generated by bench/data/generate-memory-dataset.ts (deterministic).',
  memories: memories.map(({ id, topic, content }) => ({ id, topic, content })),
  queries,
};
const file = path.join(path.dirname(fileURLToPath(import.meta.url)), 'memory-retrieval.json');
fs.writeFileSync(file, `${JSON.stringify(out, null, 1)}\n`);
process.stdout.write(`wrote ${file}: ${memories.length} memories, ${queries.length} queries\n`);
