#!/usr/bin/perl

# redis_ratelimit_deny_cache: a key over its limit is answered by this
# nginx, without Redis, until Redis's own end of the rejection. A hot key:
# one EVALSHA a request until the first rejection, none while cached, the
# same headers, Retry-After no later than Redis's, Redis again afterwards.
# Never a rejection Redis would not make: five algorithms, random costs
# and pace, two nginx on one key, each cached-or-not rejection checked
# against Redis's own answer just before it. Costs below the cached one go
# to Redis; dry_run neither uses nor fills the cache; "off" sends every
# request to Redis; the cache survives a reload, a changed zone does not
# use old rejections.

use strict;
use warnings;

use FindBin;
use IO::Socket::INET;
use Socket qw(IPPROTO_TCP TCP_NODELAY);
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->write_file('html/index.html', "OK\n");
$t->start_redis;

# five zones of one algorithm each, at 5r/s, and their effective burst
my @algorithms = (
    ['fw', 'fixed_window', 0],
    ['sw', 'sliding_window', 0],
    ['sl', 'sliding_log', 0],
    ['tb', 'token_bucket', 5],
    ['lb', 'leaky_bucket', 2],
);

my $zones = join '', map {
    "    redis_ratelimit_zone \$arg_key zone=$_->[0] rate=5r/s "
        . "algorithm=$_->[1] burst=$_->[2];\n"
} @algorithms;
my $locations = join '', map {
    "        location /$_->[0]/ {\n"
        . "            alias %%TESTDIR%%/html/;\n"
        . "            redis_ratelimit zone=$_->[0] cost=\$arg_cost;\n"
        . "        }\n"
} @algorithms;

my $conf = <<'EOF';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    %%DENY_CACHE%%
    redis_ratelimit_zone $arg_key zone=hot rate=3r/4s algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=cost rate=6r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=dry rate=2r/h algorithm=fixed_window;
%%ZONES%%
    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location /hot/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=hot;
        }

        location /cost/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=cost cost=$arg_cost;
        }

        location /dry/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=dry;
            redis_ratelimit_dry_run on;
        }

        location /enforce/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=dry;
        }

%%LOCATIONS%%    }
}
EOF

sub conf {
    my ($deny_cache) = @_;
    (my $c = $conf) =~ s/%%DENY_CACHE%%/$deny_cache/;
    $c =~ s/%%ZONES%%/$zones/;
    $c =~ s/%%LOCATIONS%%/$locations/;
    return $c;
}

my $n = $t->start_nginx(conf(''));
my $off = $t->start_nginx(conf('redis_ratelimit_deny_cache off;'));

# EVALSHA calls Redis has run (the module's; the probe below uses EVAL)
sub evalsha_calls { $t->commandstats->{evalsha} // 0 }

sub cached_lines {
    my ($inst, $zone) = @_;
    return scalar $inst->grep_log(qr/by zone "\Q$zone\E" \(cached\)/);
}

my $calls;

# the EVALSHA calls since the last look
sub new_calls {
    my $now = evalsha_calls();
    my $d = $now - $calls;
    $calls = $now;
    return $d;
}

###########################################################################
# (i) a hot key over its limit

{
    my $P = 4;
    my $wend = $t->wait_window($P, 3);
    $calls = evalsha_calls();

    for my $i (1 .. 3) {
        my $r = $n->get('/hot/?key=bot');
        is($r->{status}, 200, "hot key, request $i: 200");
        is(new_calls(), 1, "hot key, request $i: one EVALSHA");
    }

    my $first = $n->get('/hot/?key=bot');
    is($first->{status}, 429, 'hot key, request 4: 429');
    is(new_calls(), 1, 'hot key, request 4: from Redis, one EVALSHA');
    is($first->{h}{'x-ratelimit-reset'}, $wend, 'hot key, request 4: Reset');
    my $redis_retry = $first->{h}{'retry-after'} // 0;
    cmp_ok($redis_retry, '>=', 1, 'hot key, request 4: Retry-After');

    my (@bad, @retry);
    for my $i (5 .. 24) {
        my $r = $n->get('/hot/?key=bot');
        push @retry, $r->{h}{'retry-after'} // -1;
        for my $h (qw(x-ratelimit-limit x-ratelimit-remaining
                x-ratelimit-reset))
        {
            push @bad, "request $i: $h"
                if ($r->{h}{$h} // '-') ne ($first->{h}{$h} // '');
        }
        push @bad, "request $i: status $r->{status}" if $r->{status} != 429;
        push @bad, "request $i: X-RL-Status" if $r->{h}{'x-rl-status'} ne 'REJECTED';
        push @bad, "request $i: headers " . join(',', sort keys %{ $r->{h} })
            if join(',', sort keys %{ $r->{h} })
                ne join(',', sort keys %{ $first->{h} });
    }
    is("@bad", '', 'hot key, 20 more requests: 429, REJECTED, the headers '
        . 'of the one from Redis');
    is(new_calls(), 0, 'hot key, 20 more requests: no EVALSHA');
    is(scalar(grep { $_ >= 1 && $_ <= $redis_retry } @retry), 20,
        "hot key: cached Retry-After between 1 and Redis's $redis_retry (@retry)");
    is(cached_lines($n, 'hot'), 20, 'hot key: 20 rejections logged as (cached)');
    is(scalar $n->grep_log(qr/by zone "hot", key "bot"/), 1,
        'hot key: one rejection logged from Redis');

    # the window over: Redis again, and a pass
    sleep($wend - $t->redis_time + 0.05);
    my $r = $n->get('/hot/?key=bot');
    is($r->{status}, 200, 'hot key, after the window: 200');
    is(new_calls(), 1, 'hot key, after the window: one EVALSHA');
}

###########################################################################
# (ii) never a rejection Redis would not make
#
# Before each request to the cached nginx, a probe asks Redis (one atomic
# script: TIME, then the algorithm's own check, which only reads) whether
# the request would pass at that instant t0. The client is sequential, so
# nothing consumes between t0 and the nginx's decision, and a key only
# relaxes with time: a pass at t0 is a pass at the decision. A 429 after a
# passing probe is a rejection Redis would not have made, and fails the
# test. (An error shorter than the probe-to-decision gap, under a
# millisecond, goes unseen here; tests/script/deny_entry_test.cpp checks the arithmetic
# to the microsecond against the script.) The cache-off nginx shares the
# key: its passes consume what the cached nginx learned about.

my $probe_script = join('', map { RRL::Test::read_file($_) }
        grep { !/ratelimit\.lua$/ } sort glob("$FindBin::Bin/../lua/*.lua"))
    . <<'EOF';
local algorithms = {
  fixed_window = fixed_window, sliding_log = sliding_log,
  sliding_window = sliding_window, token_bucket = token_bucket,
  leaky_bucket = leaky_bucket,
}
local t = redis.call('TIME')
local l = {
  key = KEYS[1], limit = tonumber(ARGV[2]),
  period = tonumber(ARGV[3]) * 1000, burst = tonumber(ARGV[4]),
  cost = tonumber(ARGV[5]),
}
return algorithms[ARGV[1]].check(l, tonumber(t[1]) * 1000000 + tonumber(t[2]))
EOF

# a connection of our own: a redis-cli process would widen the gap
my $redis = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
    PeerPort => $t->redis_port, Proto => 'tcp') or die "redis: $!";
setsockopt($redis, IPPROTO_TCP, TCP_NODELAY, 1);

sub resp_command {
    my (@args) = @_;
    my $req = '*' . @args . "\r\n"
        . join('', map { '$' . length($_) . "\r\n$_\r\n" } @args);
    # one write: a script cut in two would wait for a delayed ACK
    while (length $req) {
        my $n = syswrite($redis, $req) // die "redis: $!";
        substr($req, 0, $n) = '';
    }
    my $line = <$redis> // die 'redis: connection closed';
    $line =~ s/\r\n\z//;
    die "redis: $line" unless $line =~ /^:(-?\d+)$/;
    return $1;
}

srand(20240611);

for my $a (@algorithms) {
    my ($zone, $algorithm, $burst) = @$a;
    my $key = "rrl:{$zone:k}:$zone";
    my ($false, $to_n, $to_off, $rejected) = (0, 0, 0, 0);
    my $cached = cached_lines($n, $zone);
    $calls = evalsha_calls();

    my $end = time + 2;
    while (time < $end) {
        my $cost = 1 + int(rand(3));
        my $uri = "/$zone/?key=k&cost=$cost";

        if (rand() < 0.7) {
            my $would_pass = resp_command('EVAL', $probe_script, 1, $key,
                $algorithm, 5, 1000, $burst, $cost);
            my $r = $n->get($uri);
            $to_n++;
            if (($r->{status} // 0) == 429) {
                $rejected++;
                if ($would_pass) {
                    $false++;
                    diag("$algorithm: $uri rejected, Redis would pass it");
                }
            }
        } else {
            $off->get($uri);
            $to_off++;
        }

        sleep(rand(0.06));
    }

    $cached = cached_lines($n, $zone) - $cached;
    is($false, 0, "$algorithm: no rejection Redis would not make "
        . "($to_n requests, $rejected rejected, $cached by the cache)");
    cmp_ok($cached, '>=', 3, "$algorithm: the cache answered");
    is(new_calls(), $to_n + $to_off - $cached,
        "$algorithm: Redis asked by every request but the cached ones");
}

is(scalar $off->grep_log(qr/\(cached\)/), 0, 'off: nothing from a cache');

###########################################################################
# (iii) costs: a rejection applies to costs at least its own

{
    $t->wait_window(3600, 10);
    $calls = evalsha_calls();

    my @steps = (
        # cost, status, EVALSHA calls, why
        [3, 200, 1, '3 of 6'],
        [5, 429, 1, 'over: learned for cost 5'],
        [5, 429, 0, 'cost 5: cached'],
        [6, 429, 0, 'cost 6: cached'],
        [1, 200, 1, 'cost 1: below 5, Redis passes it'],
        [4, 429, 1, 'cost 4: below 5, Redis rejects it: learned for 4'],
        [4, 429, 0, 'cost 4: cached'],
        [2, 200, 1, 'cost 2: below 4, Redis passes it (0 left)'],
        [1, 429, 1, 'cost 1: Redis rejects it: learned for 1'],
        [1, 429, 0, 'cost 1: cached'],
        [3, 429, 0, 'cost 3: cached'],
    );

    for my $s (@steps) {
        my ($cost, $status, $evalsha, $why) = @$s;
        my $r = $n->get("/cost/?key=c&cost=$cost");
        is($r->{status}, $status, "cost: $why: $status");
        is(new_calls(), $evalsha, "cost: $why: $evalsha EVALSHA");
    }
}

###########################################################################
# (iv) dry_run neither uses nor fills the cache

{
    $calls = evalsha_calls();

    my @st = map { $n->get('/dry/?key=d')->{h}{'x-rl-status'} } 1 .. 5;
    is("@st", 'PASSED PASSED REJECTED_DRY_RUN REJECTED_DRY_RUN '
        . 'REJECTED_DRY_RUN', 'dry run: 2 passed, 3 would be rejected');
    is(new_calls(), 5, 'dry run: each from Redis');

    my $r = $n->get('/enforce/?key=d');
    is($r->{status}, 429, 'enforced, same key: 429');
    is(new_calls(), 1, 'enforced, same key: from Redis, dry run filled nothing');

    $r = $n->get('/enforce/?key=d');
    is($r->{status}, 429, 'enforced again: 429');
    is(new_calls(), 0, 'enforced again: cached');

    $r = $n->get('/dry/?key=d');
    is($r->{h}{'x-rl-status'}, 'REJECTED_DRY_RUN', 'dry run after: REJECTED_DRY_RUN');
    is($r->{status}, 200, 'dry run after: served');
    is(new_calls(), 1, 'dry run after: from Redis, not the cache');
    is(scalar $n->grep_log(qr/dry run, by zone "dry" \(cached\)/), 0,
        'dry run: never "(cached)"');
}

###########################################################################
# (v) off: every request to Redis

{
    $t->wait_window(4, 3);
    $calls = evalsha_calls();

    my @st = map { $off->get('/hot/?key=off')->{status} } 1 .. 10;
    is("@st", '200 200 200 ' . join(' ', ('429') x 7), 'off: 3 passed, 7 rejected');
    is(new_calls(), 10, 'off: ten EVALSHA');
    is(scalar $off->grep_log(qr/by zone "hot", key "off"/), 7,
        'off: seven rejections logged, from Redis');
}

###########################################################################
# (vi) reloads: the cache survives one; a changed zone uses no old rejection

{
    $t->wait_window(3600, 15);
    $calls = evalsha_calls();

    my @st = map { $n->get('/cost/?key=r&cost=6')->{status} } 1 .. 3;
    is("@st", '200 429 429', 'reload: cost 6 of 6, then rejected');
    is(new_calls(), 2, 'reload: the third from the cache');

    $n->reload;
    $calls = evalsha_calls();

    my $r = $n->get('/cost/?key=r&cost=6');
    is($r->{status}, 429, 'after a reload: 429');
    is(new_calls(), 0, 'after a reload: still cached');

    (my $c = conf('')) =~ s/zone=cost rate=6r\/h/zone=cost rate=12r\/h/;
    $n->reload($c);
    $calls = evalsha_calls();

    $r = $n->get('/cost/?key=r&cost=6');
    is($r->{status}, 200, 'rate changed to 12r/h: 200');
    is($r->{h}{'x-ratelimit-remaining'}, 0, 'rate changed to 12r/h: 0 left');
    is(new_calls(), 1, 'rate changed to 12r/h: from Redis, not the old rejection');
}

close $redis;

$t->done_testing;
