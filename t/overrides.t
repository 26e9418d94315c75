#!/usr/bin/perl

# Live overrides (redis_ratelimit_zone ... overrides=on): a value stored
# at rrl:{ZONE:KEY}:limit replaces the zone's limit for that key, read by
# the script in the same call, from the next request on:
# - "Nr/PERIOD [burst=B]" in each algorithm: the status, X-RateLimit-*,
#   RateLimit and RateLimit-Policy are exactly those of a twin zone written
#   rate=Nr/PERIOD [burst=B] (no burst: the algorithm's default);
# - "unlimited": any number pass while the zone's rate would reject, no
#   rate limit header and empty variables, nothing counted in Redis;
# - "block": 429 (or the location's status; REJECTED_DRY_RUN in dry run),
#   Limit 0, Remaining 0, RateLimit-Policy q=0 with the zone's w,
#   Retry-After the zone's period, or the override key's TTL when it has
#   one; logged as a rejection;
# - a TTL: the override applies, then the zone's rate again once expired;
# - two limits on a request: an unlimited one never rejects, the other
#   still does and its headers are shown;
# - overrides=off: an override key in Redis is ignored and no GET of it is
#   sent (INFO commandstats); overrides=on: exactly one GET more per limit;
# - the metric redis_ratelimit_overrides_total{zone,kind}: every kind of
#   every overrides=on zone, none for the others, exact counts.
# Invalid values, hashed keys and two nginx changing overrides mid-traffic:
# t/overrides_invalid.t, t/overrides_live.t; Cluster: t/overrides_cluster.t.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(ceil);
use Test::More;
use Time::HiRes qw(sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my @ALG = qw(sliding_window fixed_window sliding_log token_bucket leaky_bucket);

my $zones = join '', map {
    "    redis_ratelimit_zone \$arg_key zone=o_$_ rate=2r/h algorithm=$_ overrides=on;\n"
  . "    redis_ratelimit_zone \$arg_key zone=b_$_ rate=7r/m burst=3 algorithm=$_;\n"
  . "    redis_ratelimit_zone \$arg_key zone=d_$_ rate=7r/m algorithm=$_;\n"
} @ALG;

my $locations = join '', map {
    "        location /o/$_/ { alias %%TESTDIR%%/html/; redis_ratelimit zone=o_$_; }\n"
  . "        location /b/$_/ { alias %%TESTDIR%%/html/; redis_ratelimit zone=b_$_; }\n"
  . "        location /d/$_/ { alias %%TESTDIR%%/html/; redis_ratelimit zone=d_$_; }\n"
} @ALG;

my $conf = <<'EOF';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
%%ZONES%%
    redis_ratelimit_zone $arg_key zone=fw rate=2r/h algorithm=fixed_window overrides=on;
    redis_ratelimit_zone $arg_key zone=off rate=2r/h algorithm=fixed_window overrides=off;
    redis_ratelimit_zone $arg_key zone=plain rate=2r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_b zone=tight rate=1r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        redis_ratelimit_headers both;
        add_header X-RL-Status $redis_ratelimit_status always;
        add_header X-Zone $redis_ratelimit_zone always;
        add_header X-Remaining $redis_ratelimit_remaining always;
        add_header X-Reset $redis_ratelimit_reset always;

%%LOCATIONS%%
        location / {
            redis_ratelimit zone=fw;
        }
        location /s503/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fw;
            redis_ratelimit_status 503;
        }
        location /dry/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fw;
            redis_ratelimit_dry_run on;
        }
        location /two/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fw;
            redis_ratelimit zone=tight;
        }
        location /off/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=off;
        }
        location /plain/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=plain;
        }
        location = /metrics {
            redis_ratelimit_metrics;
        }
    }
}
EOF
$conf =~ s/%%ZONES%%\n/$zones/;
$conf =~ s/%%LOCATIONS%%\n/$locations/;

my $n = $t->start_nginx($conf);

# the same without the deny cache: every answer is Redis's
(my $conf_nocache = $conf) =~ s/^(http \{\n)/$1    redis_ratelimit_deny_cache off;\n/m;
my $nc = $t->start_nginx($conf_nocache);

sub limit_key { "rrl:{$_[0]:$_[1]}:limit" }

sub rl_headers {
    my ($r) = @_;
    return join ' ', sort grep { /^x-ratelimit-|^ratelimit|^retry-after$/ }
        keys %{ $r->{h} };
}

sub metrics {
    my ($m, $r) = $n->metrics;
    return ($m, $r->{body});
}

sub ov { "redis_ratelimit_overrides_total{zone=\"$_[0]\",kind=\"$_[1]\"}" }

###########################################################################
# a rate override in each algorithm: exactly a twin zone's answers

my $wend = $t->wait_window(60, 25);

# the comparable part of a response, the zone's name made the same
sub shown {
    my ($r, $zone) = @_;
    my %s = (status => $r->{status}, rl => $r->{h}{'x-rl-status'} // '');
    for my $h (qw(x-ratelimit-limit x-ratelimit-remaining ratelimit-policy
                  ratelimit)) {
        my $v = $r->{h}{$h} // '(none)';
        $v =~ s/"\Q$zone\E"/"Z"/g;
        $v =~ s/;t=\d+//;      # seconds left: compared within 1 s below
        $s{$h} = $v;
    }
    $s{reset} = $r->{h}{'x-ratelimit-reset'} // -1;
    $s{t} = ($r->{h}{'ratelimit'} // '') =~ /;t=(\d+)/ ? $1 : -1;
    return \%s;
}

my %over_count = (rate => 0, unlimited => 0, block => 0, invalid => 0);

for my $cached (0, 1) {
for my $alg (@ALG) {
    for my $case (['b', '7r/m burst=3'], ['d', '7r/m']) {
        my ($twin, $value) = @$case;
        my $key = "tw-$twin-$alg-$cached";
        my $via = $cached ? $n : $nc;
        my $name = "$alg, '$value'" . ($cached ? ', deny cache' : '');
        is($t->redis('SET', limit_key("o_$alg", $key), $value), 'OK',
            "$name: override set");
        my @diff;
        my $passed = 0;
        my $last_policy = '';
        for my $i (1 .. 12) {
            my $ro = $via->get("/o/$alg/?key=$key");
            my $rt = $via->get("/$twin/$alg/?key=$key");
            $passed++ if $ro->{status} == 200;
            $last_policy = $ro->{h}{'ratelimit-policy'} // '';
            my ($so, $st) = (shown($ro, "o_$alg"), shown($rt, "${twin}_$alg"));
            for my $f (sort keys %$so) {
                my $close = $f eq 'reset' || $f eq 't'
                    ? abs($so->{$f} - $st->{$f}) <= 1 : $so->{$f} eq $st->{$f};
                push @diff, "$i $f: override $so->{$f}, twin $st->{$f}"
                    unless $close;
            }
        }
        is_deeply(\@diff, [], "$name: the answers of a zone written so")
            or diag(join "\n", @diff);
        cmp_ok($passed, '>', 0, "$name: some passed");
        ok($passed < 12, "$name: and its own limit rejected some");
        like($last_policy, qr/^"o_\Q$alg\E";q=\d+;w=60\b/,
            "$name: the override's w in the policy");
    }
}
}

# the metric counts one per request that reached Redis with an override
# found (not the deny cache's answers)

###########################################################################
# a rate override in a fixed window: the numbers themselves

$wend = $t->wait_window(3600, 30);
my $w = $wend / 3600 - 1;

$t->redis('SET', limit_key('fw', 'r5'), '5r/h burst=1');
for my $i (1 .. 6) {
    my $r = $n->get('/?key=r5');
    is($r->{status}, 200, "5r/h burst=1, $i: 200");
    is($r->{h}{'x-ratelimit-limit'}, 6, "5r/h burst=1, $i: Limit 6");
    is($r->{h}{'x-ratelimit-remaining'}, 6 - $i, "5r/h burst=1, $i: Remaining");
    is($r->{h}{'x-ratelimit-reset'}, $wend, "5r/h burst=1, $i: Reset");
    is($r->{h}{'ratelimit-policy'}, '"fw";q=6;w=3600',
        "5r/h burst=1, $i: RateLimit-Policy q and w of the override");
    is($r->{h}{'x-remaining'}, 6 - $i, "5r/h burst=1, $i: \$redis_ratelimit_remaining");
    is($r->{h}{'x-zone'}, 'fw', "5r/h burst=1, $i: \$redis_ratelimit_zone");
}
my $r = $n->get('/?key=r5');
is($r->{status}, 429, '5r/h burst=1, 7: 429');
is($r->{h}{'x-ratelimit-limit'}, 6, '5r/h burst=1, 7: Limit 6');
is($t->redis('GET', 'rrl:{fw:r5}:fw'), "$w:6", '5r/h burst=1: the state counts 6');
is(scalar($n->grep_log(qr/limiting requests by zone "fw", key "r5", rate 5r\/h \(override\), retry after \d+s/)), 1,
    '5r/h burst=1: the rejection logged with the rate applied');

# the same key without its override: the zone's 2r/h (already over)
$r = $n->get('/plain/?key=r5');
is($r->{h}{'x-ratelimit-limit'}, 2, 'another zone, same key: not overridden');

# surrounding and repeated blanks are allowed
$t->redis('SET', limit_key('fw', 'blanks'), "  3r/h   burst=2 ");
$r = $n->get('/?key=blanks');
is($r->{status}, 200, 'blanks around and between words: 200');
is($r->{h}{'x-ratelimit-limit'}, 5, 'blanks: the override applies (3 + 2)');
is($r->{h}{'ratelimit-policy'}, '"fw";q=5;w=3600', 'blanks: its policy');
$over_count{rate} += 7 + 1;

###########################################################################
# unlimited: any number pass, nothing shown, nothing counted

$t->redis('SET', limit_key('fw', 'vip'), 'unlimited');
my @st;
for my $i (1 .. 10) {
    $r = $n->get('/?key=vip');
    push @st, "$r->{status} " . ($r->{h}{'x-rl-status'} // '-');
    is(rl_headers($r), '', "unlimited $i: no rate limit header");
    ok(!defined $r->{h}{'x-zone'} && !defined $r->{h}{'x-remaining'}
        && !defined $r->{h}{'x-reset'},
        "unlimited $i: \$redis_ratelimit_zone, _remaining, _reset empty");
}
is("@st", join(' ', ('200 PASSED') x 10), 'unlimited: 10 pass at 2r/h');
is($t->redis('EXISTS', 'rrl:{fw:vip}:fw'), 0, 'unlimited: no state written');

# the same in dry run
$r = $n->get('/dry/?key=vip');
is($r->{h}{'x-rl-status'}, 'PASSED', 'unlimited in dry run: PASSED');
$over_count{unlimited} += 11;

# the zone's limit comes back once deleted: 2 pass, the third is rejected
$t->redis('DEL', limit_key('fw', 'vip'));
@st = map { $n->get('/?key=vip')->{status} } 1 .. 3;
is("@st", '200 200 429', 'unlimited deleted: the zone\'s 2r/h again');

###########################################################################
# block

$t->redis('SET', limit_key('fw', 'bad'), 'block');
my ($t0, $t1);
for my $i (1 .. 3) {
    $r = $n->get('/?key=bad');
    is($r->{status}, 429, "block $i: 429");
    is($r->{h}{'x-rl-status'}, 'REJECTED', "block $i: REJECTED");
    is($r->{h}{'x-ratelimit-limit'}, 0, "block $i: Limit 0");
    is($r->{h}{'x-ratelimit-remaining'}, 0, "block $i: Remaining 0");
    is($r->{h}{'ratelimit-policy'}, '"fw";q=0;w=3600',
        "block $i: RateLimit-Policy q=0, the zone's w");
    my $ra = $r->{h}{'retry-after'} // -1;
    ok($ra >= 3599 && $ra <= 3600, "block $i: Retry-After the zone's period")
        or diag "Retry-After $ra";
}
is($t->redis('EXISTS', 'rrl:{fw:bad}:fw'), 0, 'block: nothing counted');
is(scalar($n->grep_log(qr/limiting requests by zone "fw", key "bad", rate block \(override\), retry after 3600s/)), 1,
    'block: the rejection logged (then the deny cache\'s)');
is(scalar($n->grep_log(qr/limiting requests by zone "fw" \(cached\), key "bad"/)), 2,
    'block: learned by the deny cache');
$over_count{block}++;

# block with another status, and in dry run (other keys: the cache above)
$t->redis('SET', limit_key('fw', 'bad503'), 'block');
$r = $n->get('/s503/?key=bad503');
is($r->{status}, 503, 'block: the location\'s redis_ratelimit_status');
$t->redis('SET', limit_key('fw', 'baddry'), 'block');
for my $i (1 .. 2) {
    $r = $n->get('/dry/?key=baddry');
    is($r->{status}, 200, "block in dry run $i: 200");
    is($r->{h}{'x-rl-status'}, 'REJECTED_DRY_RUN', "block in dry run $i: REJECTED_DRY_RUN");
}
$over_count{block} += 3;

# block with a TTL: Retry-After is the override key's TTL, rounded up
$t->redis('SET', limit_key('fw', 'badttl'), 'block', 'PX', 4500);
$r = $n->get('/?key=badttl');
is($r->{status}, 429, 'block with a TTL: 429');
my $ra = $r->{h}{'retry-after'} // -1;
ok($ra >= 4 && $ra <= 5, "block with a TTL: Retry-After the TTL ($ra s)");
is($r->{h}{'ratelimit-policy'}, '"fw";q=0;w=3600', 'block with a TTL: policy');
$over_count{block}++;

###########################################################################
# a rate override with a TTL: applies, then the zone's rate after it expires

$t->redis('SET', limit_key('fw', 'temp'), '10r/h', 'PX', 2500);
@st = map { $n->get('/?key=temp')->{status} } 1 .. 4;
is("@st", '200 200 200 200', 'TTL: 4 pass under the override of 10r/h');
is($n->get('/?key=temp')->{h}{'x-ratelimit-limit'}, 10, 'TTL: Limit 10');
$over_count{rate} += 5;
sleep 0.2 while $t->redis('EXISTS', limit_key('fw', 'temp'));
$r = $n->get('/?key=temp');
is($r->{status}, 429, 'TTL expired: the zone\'s 2r/h rejects (5 counted)');
is($r->{h}{'x-ratelimit-limit'}, 2, 'TTL expired: Limit 2');

# block with a TTL expired: the zone's rate again (the key never counted)
# the deny cache's entry ends with Redis's wait: when the key expires
sleep 0.2 while $t->redis('EXISTS', limit_key('fw', 'badttl'));
sleep 0.3;
$r = $n->get('/?key=badttl');
is($r->{status}, 200, 'block expired: 200');
is($r->{h}{'x-ratelimit-remaining'}, 1, 'block expired: the zone\'s 2r/h, 1 left');

###########################################################################
# two limits: an unlimited one never rejects, the other applies

$t->redis('SET', limit_key('fw', 'u2'), 'unlimited');
$r = $n->get('/two/?key=u2&b=t1');
is($r->{status}, 200, 'unlimited + tight 1: 200');
is($r->{h}{'x-ratelimit-limit'}, 1, 'unlimited + tight 1: the other limit shown');
is($r->{h}{'x-zone'}, 'tight', 'unlimited + tight 1: $redis_ratelimit_zone');
is($r->{h}{'ratelimit-policy'}, '"tight";q=1;w=3600',
    'unlimited + tight 1: the unlimited limit not in the policy');
$r = $n->get('/two/?key=u2&b=t1');
is($r->{status}, 429, 'unlimited + tight 2: rejected by the other limit');
is($r->{h}{'x-zone'}, 'tight', 'unlimited + tight 2: by zone tight');
is($t->redis('EXISTS', 'rrl:{fw:u2}:fw'), 0, 'unlimited + tight: fw counted nothing');
for my $i (1 .. 3) {
    $r = $n->get("/two/?key=u2&b=other$i");
    is($r->{status}, 200, "unlimited + a fresh tight key $i: 200");
}
$over_count{unlimited} += 5;    # the second reached Redis too

# block and a limit that passes: rejected, nothing consumed from the other
$t->redis('SET', limit_key('fw', 'b2'), 'block');
$r = $n->get('/two/?key=b2&b=t2');
is($r->{status}, 429, 'block + tight: rejected');
is($r->{h}{'x-ratelimit-limit'}, 0, 'block + tight: the block shown');
is($t->redis('GET', 'rrl:{tight:t2}:fw'), '', 'block + tight: tight not consumed');
$over_count{block}++;

###########################################################################
# the deny cache: a rejection learned before an override was set lives
# until its own end (README)

@st = map { $n->get('/?key=cached')->{status} } 1 .. 3;
is("@st", '200 200 429', 'deny cache: the zone\'s 2r/h rejects');
$t->redis('SET', limit_key('fw', 'cached'), 'unlimited');
$r = $n->get('/?key=cached');
is($r->{status}, 429, 'deny cache: unlimited set later, still rejected until the entry ends');
is(scalar($n->grep_log(qr/limiting requests by zone "fw" \(cached\), key "cached"/)), 1,
    'deny cache: that rejection is the cache\'s');

###########################################################################
# overrides=off: ignored, and no GET sent; on: one GET per limit (the
# fixed window's script reads its state with one GET of its own)

$t->redis('SET', limit_key('off', 'k'), 'unlimited');
$t->redis('SET', limit_key('plain', 'k'), 'unlimited');
$t->redis('CONFIG', 'RESETSTAT');
@st = map { $n->get('/off/?key=k')->{status} } 1 .. 3;
push @st, map { $n->get('/plain/?key=k')->{status} } 1 .. 3;
my %cs = %{ $t->commandstats };
is("@st", '200 200 429 200 200 429', 'overrides=off and default: the key is ignored');
is($cs{evalsha} // 0, 6, 'overrides=off: 6 calls to Redis');
is($cs{get} // 0, 6, 'overrides=off: no GET but the state\'s (one per call)');

$t->redis('CONFIG', 'RESETSTAT');
for my $i (1 .. 5) { $n->get("/?key=gets$i") }
%cs = %{ $t->commandstats };
is($cs{get} // 0, 5 + 5, 'overrides=on, no override set: one GET more per request');
$n->get('/two/?key=gets6&b=gets6');
%cs = %{ $t->commandstats };
is($cs{get} // 0, 10 + 3, 'two limits, one with overrides=on: one GET more than their states');

###########################################################################
# the metric

my ($m, $body) = metrics();
like($body, qr/^# HELP redis_ratelimit_overrides_total Requests whose limit in the zone was an override from Redis, by kind\.$/m,
    'metrics: HELP of redis_ratelimit_overrides_total');
like($body, qr/^# TYPE redis_ratelimit_overrides_total counter$/m, 'metrics: a counter');
for my $z ('fw', map { "o_$_" } @ALG) {
    for my $k (qw(rate unlimited block invalid)) {
        ok(defined $m->{ ov($z, $k) }, "metrics: $z $k printed");
    }
}
for my $z ('off', 'plain', 'tight', map { ("b_$_", "d_$_") } @ALG) {
    ok(!grep({ index($_, "zone=\"$z\"") >= 0 } grep { /^redis_ratelimit_overrides_total/ } keys %$m),
        "metrics: no override counts for $z (overrides off)");
}
for my $k (qw(unlimited block invalid)) {
    is($m->{ ov('fw', $k) }, $over_count{$k}, "metrics: fw $k $over_count{$k}");
}
is($m->{ ov('fw', 'rate') }, 7 + 1 + 5, 'metrics: fw rate 13');
for my $alg (@ALG) {
    cmp_ok($m->{ ov("o_$alg", 'rate') } // 0, '>=', 2 * 3,
        "metrics: o_$alg rate counted");
    is($m->{ ov("o_$alg", $_) }, 0, "metrics: o_$alg $_ 0") for qw(unlimited block invalid);
}

$t->done_testing;
