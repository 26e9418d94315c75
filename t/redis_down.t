#!/usr/bin/perl

# Redis down, hung or restarted: fail open passes (FAILED_OPEN), fail
# closed rejects with the configured status (FAILED_CLOSED), both at once
# (well under a second); failures logged at most once a second per worker,
# not once per request; after Redis comes back on the same port, limiting
# resumes by itself within about 2 s, also for an nginx started while Redis
# was down; a hung Redis times out after 100 ms by default.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(ceil);
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $conf = <<'EOF2';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=rd rate=3r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=rd;

        location /open/ {
            alias %%TESTDIR%%/html/;
        }
        location /closed/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail closed;
        }
        location /closed503/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail closed;
            redis_ratelimit_status 503;
        }
    }
}
EOF2

my $n = $t->start_nginx($conf);

sub failure_lines {
    my ($inst) = @_;
    return $inst->grep_log(qr/\[error\] .*redis_ratelimit: /);
}

# polls until a request gets PASSED; returns the seconds it took, or undef
sub wait_passed {
    my ($inst, $uri, $timeout) = @_;
    my $start = time;
    while (time - $start < $timeout) {
        my $r = $inst->get($uri);
        return time - $start if ($r->{h}{'x-rl-status'} // '') eq 'PASSED';
        sleep 0.05;
    }
    return undef;
}

my $r = $n->get('/open/?key=up');
is($r->{h}{'x-rl-status'}, 'PASSED', 'Redis up: PASSED');
is(scalar(failure_lines($n)), 0, 'Redis up: no failure logged');

# Redis down

$t->stop_redis;

my $n2 = $t->start_nginx($conf, wait_connected => 0);

my %expect = (
    open => [200, 'FAILED_OPEN'],
    closed => [429, 'FAILED_CLOSED'],
    closed503 => [503, 'FAILED_CLOSED'],
);

my (%bad, $slowest, $count);
$slowest = 0;
my $start = time;

while (time - $start < 1.6) {
    for my $loc (sort keys %expect) {
        for my $inst ($n, $n2) {
            my $r = $inst->get("/$loc/?key=k" . $count++);
            my $got = join ' ', $r->{status} // 'none', $r->{h}{'x-rl-status'} // 'none';
            $bad{"$loc: $got"}++ if $got ne "@{ $expect{$loc} }";
            $bad{"$loc: rate limit headers"}++
                if grep { /^x-ratelimit-|^retry-after$/ } keys %{ $r->{h} };
            $slowest = $r->{time} if $r->{time} > $slowest;
        }
    }
    sleep 0.03;
}
my $elapsed = time - $start;

cmp_ok($count, '>=', 30, "Redis down: $count requests made");
is_deeply(\%bad, {}, 'Redis down: open 200 FAILED_OPEN, closed 429 and 503 '
    . 'FAILED_CLOSED, no rate limit headers');
cmp_ok($slowest, '<', 1, sprintf('Redis down: every response fast (slowest %.3f s)', $slowest));

for my $inst ($n, $n2) {
    my @f = failure_lines($inst);
    my $max = ceil($elapsed) + 2;
    ok(@f >= 1 && @f <= $max,
        "nginx$inst->{index}: Redis down logged " . scalar(@f)
        . " times in $count/2 requests over " . sprintf('%.1f', $elapsed)
        . " s (1 .. $max)") or diag(join "\n", @f);
    like($f[0] // '', qr/redis_ratelimit: .*127\.0\.0\.1:\Q${\ $t->redis_port}\E/,
        "nginx$inst->{index}: the failure names the server");
}

# Redis back on the same port: no restart of nginx

$t->start_redis;

for my $inst ($n, $n2) {
    my $took = wait_passed($inst, '/open/?key=back', 3);
    ok(defined $took && $took < 2.5,
        "nginx$inst->{index}: limiting resumed "
        . (defined $took ? sprintf('after %.2f s', $took) : 'never'));
}

my @st = map { my $r = $n->get('/closed/?key=again');
               ($r->{status} // 'none') . ' ' . ($r->{h}{'x-rl-status'} // 'none') } 1 .. 4;
is("@st[0 .. 2]", join(' ', ('200 PASSED') x 3), 'Redis back: fail closed location passes');
is($st[3], '429 REJECTED', 'Redis back: and limits again');

# a hung Redis (SIGSTOP): the default timeout of 100 ms

my $before = () = $n->grep_log(qr/timed out after 100 ms/);
sleep 1.1;    # so that a failure may be logged in this second

$t->signal_redis('STOP');

my @hung = map { $n->get("/$_/?key=hung") } qw(open closed closed503);

$n->abort('/open/?key=gone', 0.01);    # a client going away mid-call

$t->signal_redis('CONT');

is($hung[0]{status}, 200, 'hung Redis, open: 200');
is($hung[0]{h}{'x-rl-status'}, 'FAILED_OPEN', 'hung Redis, open: FAILED_OPEN');
is($hung[1]{status}, 429, 'hung Redis, closed: 429');
is($hung[1]{h}{'x-rl-status'}, 'FAILED_CLOSED', 'hung Redis, closed: FAILED_CLOSED');
is($hung[2]{status}, 503, 'hung Redis, closed 503: 503');
for my $i (0 .. 2) {
    ok($hung[$i]{time} >= 0.09 && $hung[$i]{time} < 1,
        sprintf('hung Redis, request %d: answered after the timeout (%.3f s)',
            $i, $hung[$i]{time}));
}
my $timeouts = () = $n->grep_log(qr/redis_ratelimit: request to 127\.0\.0\.1:\d+ failed: timed out after 100 ms/);
ok($timeouts - $before >= 1 && $timeouts - $before <= 2,
    'hung Redis: the timeouts logged, at most once a second');

my $took = wait_passed($n, '/open/?key=cont', 2);
ok(defined $took, 'Redis resumed: PASSED again');
$r = $n->get('/open/?key=cont2');
is($r->{h}{'x-ratelimit-remaining'}, 2, 'Redis resumed: counting as usual');

# a quick restart (the connection is lost, Redis is back at once)

$t->stop_redis;
$t->start_redis;
$took = wait_passed($n, '/open/?key=restart', 3);
ok(defined $took && $took < 2.5, 'quick restart: limiting resumed '
    . (defined $took ? sprintf('after %.2f s', $took) : 'never'));

# Redis killed while a call is in flight

$t->signal_redis('STOP');
my $s = RRL::Test::http_send($n->port, 'GET', '/closed/?key=inflight');
sleep 0.03;
$t->signal_redis('KILL');
$t->stop_redis;
$r = RRL::Test::http_read($s);
is($r->{status}, 429, 'Redis killed mid-call, fail closed: 429');
is($r->{h}{'x-rl-status'}, 'FAILED_CLOSED', 'Redis killed mid-call: FAILED_CLOSED');
ok($r->{time} < 1, sprintf('Redis killed mid-call: fast (%.3f s)', $r->{time}));

$t->start_redis;
$took = wait_passed($n, '/open/?key=afterkill', 3);
ok(defined $took && $took < 2.5, 'after the kill: limiting resumed '
    . (defined $took ? sprintf('after %.2f s', $took) : 'never'));

$t->done_testing;
