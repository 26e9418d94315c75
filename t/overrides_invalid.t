#!/usr/bin/perl

# Live overrides: invalid values and hashed keys.
# - An invalid override (garbage, 0r/s, 10r/x, burst=-1, an empty string,
#   uppercase, numbers over 2^53, a key of another type...) is not applied:
#   the request works under the zone's own limit, an error line names the
#   zone, the key (escaped as the rejection log escapes it) and the Redis
#   key, at most once a second per worker (a burst of requests: one line,
#   the next one says how many were suppressed), and
#   redis_ratelimit_overrides_total{kind="invalid"} counts every request.
# - A client key over 128 bytes or starting with "#" is hashed: its
#   override is at rrl:{ZONE:#<sha1 hex of the key>}:limit (the one the
#   README's `printf '%s' "$KEY" | sha1sum` gives); a key of 128 bytes is
#   used as is.

use strict;
use warnings;

use Digest::SHA qw(sha1_hex);
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_deny_cache off;
    redis_ratelimit_zone $arg_key zone=inv rate=2r/h algorithm=fixed_window overrides=on;
    redis_ratelimit_zone $arg_key zone=isl rate=2r/h algorithm=sliding_log overrides=on;
    redis_ratelimit_zone $http_x_key zone=hz rate=2r/h algorithm=fixed_window overrides=on;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=inv;
        }
        location /sl/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=isl;
        }
        location /h/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=hz;
        }
        location = /metrics {
            redis_ratelimit_metrics;
        }
    }
}
EOF

$t->wait_window(3600, 60);

sub limit_key { "rrl:{$_[0]:$_[1]}:limit" }

# sleeps into the first tenth of the next second: the log's once a second
# is counted in whole seconds of the worker's clock
sub next_second {
    my $now = time;
    sleep(int($now) + 1.02 - $now);
}

sub invalid_re {
    my ($zone, $key, $rkey) = @_;
    $rkey //= $key;
    return qr/\[error\] \d+#\d+: \*\d+ redis_ratelimit: invalid override of zone "\Q$zone\E", key "\Q$key\E" in "rrl:\{\Q$zone\E:\Q$rkey\E\}:limit", the zone's rate applies(?:,| \()/;
}

sub any_invalid { scalar $n->grep_log(qr/redis_ratelimit: invalid override of zone/) }

sub metric { ($n->zone_metrics('overrides_total', $_[0], 'kind', $_[1]))[0] }

###########################################################################
# invalid values: the zone's limit, one line, counted

my @bad = (
    ['garbage', 'garbage'],
    ['zero', '0r/s'],
    ['unit', '10r/x'],
    ['negative burst', '10r/s burst=-1'],
    ['empty string', ''],
    ['uppercase', '10R/S'],
    ['no r', '10/s'],
    ['zero period', '10r/0s'],
    ['empty burst', '10r/s burst='],
    ['unknown word', '10r/s delay=1'],
    ['trailing word', 'unlimited please'],
    ['capitalised', 'Block'],
    ['N over 10^9 (a zone\'s bound)', '1000000001r/h'],
    ['burst over 10^9', '1r/s burst=1000000001'],
    ['over 2^53', '9007199254740993r/s'],
    ['burst over 2^53', '1r/s burst=9007199254740993'],
    ['a fractional period', '1r/0.5s'],
    ['a lifetime over 100 years', '1r/5300w'],
);

my $invalid = 0;
my $i = 0;
for my $case (@bad) {
    my ($name, $value) = @$case;
    my $key = 'bad' . $i++;
    is($t->redis('SET', limit_key('inv', $key), $value), 'OK', "$name: set");
    next_second();
    my @st = map { $n->get("/?key=$key") } 1 .. 3;
    $invalid += 3;
    is(join(' ', map { $_->{status} } @st), '200 200 429',
        "$name: the zone's 2r/h applies");
    is($st[0]{h}{'x-ratelimit-limit'}, 2, "$name: Limit of the zone");
    ok($n->wait_log(invalid_re('inv', $key), 1, 2), "$name: logged");
    is(scalar($n->grep_log(invalid_re('inv', $key))), 1, "$name: logged once");
}

# the bounds themselves are valid
$t->redis('SET', limit_key('inv', 'maxn'), '1000000000r/h burst=1000000000');
my $r = $n->get('/?key=maxn');
is($r->{h}{'x-ratelimit-limit'}, 2000000000, 'N and burst of 10^9: applied');

# a key of another type at the override key
$t->redis('RPUSH', limit_key('inv', 'list'), '100r/s');
$t->redis('HSET', limit_key('inv', 'hash'), 'limit', '100r/s');
for my $key (qw(list hash)) {
    next_second();
    my @st = map { $n->get("/?key=$key") } 1 .. 3;
    $invalid += 3;
    is(join(' ', map { $_->{status} } @st), '200 200 429',
        "a $key at the override key: the zone's 2r/h applies");
    is($st[0]{h}{'x-rl-status'}, 'PASSED', "a $key: PASSED, not a failure");
    ok($n->wait_log(invalid_re('inv', $key), 1, 2), "a $key: logged");
}
is(scalar($n->grep_log(qr/\[(?:alert|crit|emerg)\]|WRONGTYPE|redis_errors/)), 0,
    'a key of another type: no Redis error');

# sliding_log: N + burst over 10,000 is invalid, 10,000 is not
$t->redis('SET', limit_key('isl', 'big'), '9000r/h burst=1001');
$t->redis('SET', limit_key('isl', 'max'), '9000r/h burst=1000');
next_second();
$r = $n->get('/sl/?key=big');
is($r->{h}{'x-ratelimit-limit'}, 2, 'sliding_log, N+B 10,001: the zone\'s limit');
ok($n->wait_log(invalid_re('isl', 'big'), 1, 2), 'sliding_log, N+B 10,001: logged');
$r = $n->get('/sl/?key=max');
is($r->{h}{'x-ratelimit-limit'}, 10000, 'sliding_log, N+B 10,000: applied');
is(metric('isl', 'invalid'), 1, 'sliding_log: one invalid counted');
is(metric('isl', 'rate'), 1, 'sliding_log: one rate counted');

###########################################################################
# once a second per worker: a burst of requests, one line

$t->redis('SET', limit_key('inv', 'burst'), 'nonsense');
my ($before, $t0, $t1);
for (1 .. 3) {    # the burst must fit in one second of the clock
    next_second();
    $before = any_invalid();
    $t0 = time;
    $n->get('/?key=burst') for 1 .. 20;
    $t1 = time;
    $invalid += 20;
    last if int($t0) == int($t1);
}
is(int($t0), int($t1), 'the burst took less than a second');
is(any_invalid() - $before, 1, '20 invalid overrides in one second: one line');

next_second();
$n->get('/?key=burst');
$invalid++;
ok($n->wait_log(qr/invalid override of zone "inv", key "burst" .*\(19 similar errors suppressed\)/, 1, 2),
    'the next second: one line, saying 19 were suppressed');

is(metric('inv', 'invalid'), $invalid, "metrics: inv invalid $invalid");
is(metric('inv', 'rate'), 1, 'metrics: inv rate 1');
is(metric('inv', $_), 0, "metrics: inv $_ 0") for qw(unlimited block);

###########################################################################
# the key escaped in the log as the rejection log escapes it

my $raw = "q\"uote\\d\x01";
$t->redis('SET', limit_key('hz', $raw), 'bogus');
next_second();
$r = $n->get('/h/', headers => { 'X-Key' => $raw });
is($r->{status}, 200, 'escaped key: 200');
ok($n->wait_log(invalid_re('hz', 'q\x22uote\x5cd\x01'), 1, 2),
    'escaped key: \x22, \x5c and \x01 in the key and the Redis key');

###########################################################################
# hashed keys

my $long = 'x' x 200;
my $hashed = '#' . sha1_hex($long);
$t->redis('SET', "rrl:{hz:$hashed}:limit", '5r/h burst=1');
$t->redis('SET', "rrl:{hz:$long}:limit", 'block');    # not where it goes
for my $k (1 .. 2) {
    $r = $n->get('/h/', headers => { 'X-Key' => $long });
    is($r->{status}, 200, "200-byte key $k: 200");
    is($r->{h}{'x-ratelimit-limit'}, 6, "200-byte key $k: the override at its SHA-1");
    is($r->{h}{'x-ratelimit-remaining'}, 6 - $k, "200-byte key $k: Remaining");
}
is($t->redis('EXISTS', "rrl:{hz:$hashed}:fw"), 1, '200-byte key: the state next to it');

my $sharp = '#abc';
my $sharp_hashed = '#' . sha1_hex($sharp);
is(RRL::Test::run_command('sh', '-c', "printf '%s' '$sharp' | sha1sum"),
    sha1_hex($sharp) . '  -', 'the README\'s sha1sum command gives the same hex');
$t->redis('SET', "rrl:{hz:$sharp_hashed}:limit", 'unlimited');
$t->redis('SET', "rrl:{hz:$sharp}:limit", 'block');    # not where it goes
my @st = map { $n->get('/h/', headers => { 'X-Key' => $sharp })->{status} } 1 .. 4;
is("@st", '200 200 200 200', 'a key starting with "#": its override at its SHA-1');
is($t->redis('EXISTS', "rrl:{hz:$sharp_hashed}:fw"), 0,
    'a key starting with "#", unlimited: nothing counted');

my $k128 = 'k' x 128;
$t->redis('SET', "rrl:{hz:$k128}:limit", '4r/h');
$r = $n->get('/h/', headers => { 'X-Key' => $k128 });
is($r->{h}{'x-ratelimit-limit'}, 4, 'a key of 128 bytes: its override under the key itself');

# invalid at a hashed key: the client key in the log, the hashed Redis key
$t->redis('SET', "rrl:{hz:$hashed}:limit", '5r/h burst=x');
next_second();
$r = $n->get('/h/', headers => { 'X-Key' => $long });
is($r->{h}{'x-ratelimit-limit'}, 2, 'invalid at a hashed key: the zone\'s limit');
ok($n->wait_log(invalid_re('hz', $long, $hashed), 1, 2),
    'invalid at a hashed key: the key, and the Redis key with the SHA-1');

is(metric('hz', 'rate'), 3, 'metrics: hz rate 3');
is(metric('hz', 'unlimited'), 4, 'metrics: hz unlimited 4');
is(metric('hz', 'invalid'), 2, 'metrics: hz invalid 2');
is(metric('hz', 'block'), 0, 'metrics: hz block 0 (the unhashed names are not read)');

$t->done_testing;
