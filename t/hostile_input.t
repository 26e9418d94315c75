#!/usr/bin/perl

# Hostile client input against a real redis-server: empty keys and missing
# variables (not limited), a 1 MB key (hashed: rrl:{zone:#<sha1>}:fw),
# the 128-byte boundary and keys starting with '#', binary and non-UTF-8
# bytes (raw in Redis, \xNN in the log), percent-encoded arguments (raw,
# not decoded); costs from a variable: not a positive integer counts as 1,
# over 1,000,000,000 counts as 1,000,000,000. Exact statuses and Redis
# state.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Digest::SHA qw(sha1_hex);
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF2');
http {
    large_client_header_buffers 4 2m;

    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $http_x_key zone=in rate=3r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_k zone=arg rate=3r/h algorithm=fixed_window;
    redis_ratelimit_zone $http_x_absent zone=absent rate=1r/h algorithm=fixed_window;
    redis_ratelimit_zone $http_x_key zone=cost rate=5r/h algorithm=fixed_window;
    redis_ratelimit_zone $http_x_key zone=big rate=1000000000r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit_fail closed;
        redis_ratelimit_log_level warn;

        location /key/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=in;
        }
        location /arg/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=arg;
        }
        location /absent/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=absent;
        }
        location /cost/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=cost cost=$http_x_cost;
        }
        location /big/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=big cost=$http_x_cost;
        }
    }
}
EOF2

my $P = 3600;
my $w = $t->wait_window($P, 30) / $P - 1;    # the window index in Redis

sub st {
    my ($r) = @_;
    return ($r->{status} // 'none') . ' ' . ($r->{h}{'x-rl-status'} // 'none');
}

sub req {
    my ($uri, %h) = @_;
    return $n->get($uri, headers => [%h]);
}

# statuses of $count requests
sub run {
    my ($count, $uri, %h) = @_;
    return join ', ', map { st(req($uri, %h)) } 1 .. $count;
}

my $pass3_reject = join ', ', ('200 PASSED') x 3, '429 REJECTED';

sub keys_of {
    my ($pattern) = @_;
    return sort $t->redis('KEYS', $pattern);
}

# empty key, missing variable: not limited, nothing in Redis

is(run(5, '/key/', 'X-Key' => ''), join(', ', ('200 PASSED') x 5),
    'empty X-Key: never limited, PASSED');
is(run(5, '/key/'), join(', ', ('200 PASSED') x 5),
    'no X-Key header: never limited, PASSED');
my $r = req('/key/', 'X-Key' => '');
ok(!grep({ /^x-ratelimit-|^retry-after$/ } keys %{ $r->{h} }),
    'empty key: no rate limit headers');
is(run(5, '/absent/'), join(', ', ('200 PASSED') x 5),
    '$http_x_absent (never sent): never limited');
is_deeply([keys_of('*')], [], 'empty keys: nothing stored in Redis');

# a 1 MB key: hashed

my $mb = join '', map { chr(ord('a') + $_ % 26) } 0 .. (1 << 20) - 1;
is(run(4, '/key/', 'X-Key' => $mb), $pass3_reject,
    '1 MB key: limited like any other (3 PASSED, then REJECTED)');
my $hk = 'rrl:{in:#' . sha1_hex($mb) . '}:fw';
is($t->redis('GET', $hk), "$w:3", "1 MB key: stored as $hk, count 3");
my ($other) = grep { $_ ne $hk } keys_of('rrl:{in:*');
is($other, undef, '1 MB key: no other key stored');
is(length($hk), length('rrl:{in:#}:fw') + 40, '1 MB key: Redis key of 53 bytes');

# a 1 MB key differing in its last byte: another key

(my $mb2 = $mb) =~ s/.\z/!/s;
is(st(req('/key/', 'X-Key' => $mb2)), '200 PASSED',
    '1 MB key, last byte changed: a key of its own');
is($t->redis('GET', 'rrl:{in:#' . sha1_hex($mb2) . '}:fw'), "$w:1",
    '1 MB key, last byte changed: counted on its own hash');

# the 128-byte boundary, and '#' first (could collide with a hash)

my $k128 = 'b' x 128;
my $k129 = 'b' x 129;
req('/key/', 'X-Key' => $k128);
req('/key/', 'X-Key' => $k129);
req('/key/', 'X-Key' => '#abc');
is($t->redis('GET', "rrl:{in:$k128}:fw"), "$w:1", '128-byte key: stored raw');
is($t->redis('GET', 'rrl:{in:#' . sha1_hex($k129) . '}:fw'), "$w:1",
    '129-byte key: hashed');
is($t->redis('GET', 'rrl:{in:#' . sha1_hex('#abc') . '}:fw'), "$w:1",
    "key '#abc': hashed");
is($t->redis('EXISTS', 'rrl:{in:#abc}:fw'), 0, "key '#abc': not stored raw");

# binary and non-UTF-8 bytes in a header: raw in Redis, \xNN in the log

my $bin = join '', map { chr } 0x80 .. 0xff;    # 128 bytes: kept raw
is(run(4, '/key/', 'X-Key' => $bin), $pass3_reject,
    'bytes 0x80-0xff: 3 PASSED, then REJECTED');
is($t->redis('GET', "rrl:{in:$bin}:fw"), "$w:3",
    'bytes 0x80-0xff: stored raw, count 3');

my $ctl = "\x01\x02\x1b\x7f\xc3\x28\xed\xa0\x80";    # controls, bad UTF-8
is(run(4, '/key/', 'X-Key' => $ctl), $pass3_reject,
    'control bytes and invalid UTF-8: 3 PASSED, then REJECTED');
is($t->redis('GET', "rrl:{in:$ctl}:fw"), "$w:3",
    'control bytes and invalid UTF-8: stored raw, count 3');

my @rej = $n->grep_log(qr/limiting requests by zone "in", key "\\x80\\x81\\x82/);
is(scalar @rej, 1, 'rejection logged once with the key as \xNN');
like($rej[0] // '', qr/key "(\\x[89a-f][0-9a-f])+\.\.\."/,
    'the logged binary key: only \xNN escapes, cut with "..."');
my @rejc = $n->grep_log(qr/zone "in", key "\\x01\\x02\\x1b\\x7f\\xc3\(\\xed\\xa0\\x80"/);
is(scalar @rejc, 1, 'control bytes logged escaped');
is(scalar(() = $n->grep_log(qr/zone "in", key "[a-z]{100}/)), 1,
    '1 MB key logged (cut)');

# percent-encoded arguments: $arg_ is raw, not decoded

is(run(4, '/arg/?k=%00%FF%0D%0A%20x'), $pass3_reject,
    '$arg_k "%00%FF%0D%0A%20x": 3 PASSED, then REJECTED');
is($t->redis('GET', 'rrl:{arg:%00%FF%0D%0A%20x}:fw'), "$w:3",
    '$arg_k: stored as sent (percent-encoded, not decoded)');
is($t->redis('EXISTS', "rrl:{arg:\x00\xff\r\n x}:fw"), 0,
    '$arg_k: not stored decoded');
is(run(4, "/arg/?k=\xff\xfe\x80z"), $pass3_reject,
    '$arg_k with raw bytes 0xff 0xfe 0x80: 3 PASSED, then REJECTED');
is($t->redis('GET', "rrl:{arg:\xff\xfe\x80z}:fw"), "$w:3",
    '$arg_k with raw bytes: stored raw');

# costs from a variable (rate 5r/h): not a positive integer counts as 1

my @as_one = ('-3', '-0', '0', '000', 'abc', '', '2.5', '+2', '0x10', '1e3',
    "\xd9\xa3", '-1000000000000', '2-');
my $i = 0;
for my $c (@as_one, undef) {
    my $key = 'c' . $i++;
    my $r = req('/cost/', 'X-Key' => $key,
        (defined $c ? ('X-Cost' => $c) : ()));
    my $name = defined $c ? "cost \"$c\"" : 'no X-Cost';
    is(st($r) . ' ' . ($r->{h}{'x-ratelimit-remaining'} // 'none'),
        '200 PASSED 4', "$name: counts as 1 (remaining 4)");
    is($t->redis('GET', "rrl:{cost:$key}:fw"), "$w:1",
        "$name: Redis count 1");
}

for my $case (['2', 2], ['00002', 2], ['5', 5]) {
    my ($c, $want) = @$case;
    my $key = 'c' . $i++;
    my $r = req('/cost/', 'X-Key' => $key, 'X-Cost' => $c);
    is(st($r) . ' ' . ($r->{h}{'x-ratelimit-remaining'} // 'none'),
        '200 PASSED ' . (5 - $want), "cost \"$c\": counts as $want");
    is($t->redis('GET', "rrl:{cost:$key}:fw"), "$w:$want",
        "cost \"$c\": Redis count $want");
}

for my $c ('6', '1000000000', '1000000001', '99999999999999999999999',
    '18446744073709551617', '18446744073709551616')
{
    my $key = 'c' . $i++;
    my $r = req('/cost/', 'X-Key' => $key, 'X-Cost' => $c);
    is(st($r), '429 REJECTED', "cost \"$c\": REJECTED");
    is($t->redis('EXISTS', "rrl:{cost:$key}:fw"), 0,
        "cost \"$c\": nothing stored");
}

# then a cost of 1 on a rejected key: still all 5 left
{
    my $key = 'c' . ($i - 1);
    my $r = req('/cost/', 'X-Key' => $key, 'X-Cost' => '1');
    is(($r->{h}{'x-ratelimit-remaining'} // 'none'), 4,
        'after a rejected huge cost: the key is intact (remaining 4)');
}

# a zone of 1,000,000,000 per hour: the README says a cost over
# 1,000,000,000 "counts as that, which is always rejected"

{
    my $r = req('/big/', 'X-Key' => 'b1', 'X-Cost' => '999999999');
    is(st($r), '200 PASSED', 'big zone: cost 999999999 passes');
    is($t->redis('GET', 'rrl:{big:b1}:fw'), "$w:999999999",
        'big zone: counted 999999999');

    $r = req('/big/', 'X-Key' => 'b2', 'X-Cost' => '5000000000');
    my $got = st($r);
    my $stored = $t->redis('GET', 'rrl:{big:b2}:fw');
    is($got, '429 REJECTED', 'big zone: cost 5000000000 rejected');
    is($stored, '', 'big zone: cost 5000000000 not counted');
    note("big zone, cost 5000000000: $got, Redis state '$stored'");
}

$t->check_error_logs;
$t->done_testing;
