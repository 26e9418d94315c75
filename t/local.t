#!/usr/bin/perl

# "redis_ratelimit_fail local": while Redis is down, each nginx enforces the
# limits itself in a shared memory zone of its workers: exactly N pass, then
# the configured status, FAILED_LOCAL on both, headers and Retry-After as
# from Redis; every algorithm (sliding_log as sliding_window); two workers
# share one count; local_share=1/K divides; local zones are separate, drop
# their least recently used keys when full and survive a reload; a "fail open" location beside it fails open; once Redis
# is back, Redis decides again; a hung Redis times out into a local
# decision. Then the configuration errors of the directive.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

# per day: no window or refill matters during the test
my $n = $t->start_nginx(<<'EOF');
worker_processes 2;

http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=fw rate=5r/d algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=sw rate=5r/d;
    redis_ratelimit_zone $arg_key zone=sl rate=5r/d algorithm=sliding_log;
    redis_ratelimit_zone $arg_key zone=tb rate=5r/d algorithm=token_bucket;
    redis_ratelimit_zone $arg_key zone=lb rate=5r/d algorithm=gcra burst=4;
    redis_ratelimit_zone $arg_key zone=share rate=8r/d;
    redis_ratelimit_zone $arg_key zone=many rate=30r/d algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=one rate=1r/d;

    redis_ratelimit_fail local;

    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        add_header X-Pid $pid always;

        location /fw/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fw;
        }
        location /fw-too/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fw;
        }
        location /fw-mine/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fw;
            redis_ratelimit_fail local local_zone=mine:1m;
            redis_ratelimit_status 503;
        }
        location /sw/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=sw;
        }
        location /sl/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=sl;
        }
        location /tb/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=tb;
        }
        location /lb/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=lb;
        }
        location /share/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=share;
            redis_ratelimit_fail local local_zone=mine:1m local_share=1/4;
        }
        location /many/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=many;
        }
        location /two/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=one;
            redis_ratelimit zone=fw;
        }
        location /dry/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=one;
            redis_ratelimit_dry_run on;
        }
        location /tiny/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=one;
            redis_ratelimit_fail local local_zone=tiny:32k;
        }
        location /open/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=one;
            redis_ratelimit_fail open;
        }
    }
}
EOF

sub brief {
    my ($r) = @_;
    return join ' ', $r->{status} // 'none', $r->{h}{'x-rl-status'} // 'none',
        $r->{h}{'x-ratelimit-remaining'} // '-';
}

# $count requests one after another: their "status rl remaining"
sub run {
    my ($uri, $count) = @_;
    return map { brief($n->get($uri)) } 1 .. $count;
}

sub expect {
    my ($status, $rl, @remaining) = @_;
    return map { "$status $rl $_" } @remaining;
}

# Redis up: Redis decides, nothing is kept locally

is_deeply([run('/fw/?key=a', 3)], [expect(200, 'PASSED', 4, 3, 2)],
    'Redis up: PASSED, from Redis');

$t->stop_redis;

# Redis down: exactly N pass, then 429, all FAILED_LOCAL

for my $loc (qw(fw sw sl tb lb)) {
    my @got = map { $n->get("/$loc/?key=a") } 1 .. 7;
    is_deeply([map { brief($_) } @got],
        [expect(200, 'FAILED_LOCAL', 4, 3, 2, 1, 0),
            expect(429, 'FAILED_LOCAL', 0, 0)],
        "$loc: 5 pass locally, then 429, all FAILED_LOCAL");
    is_deeply([map { $_->{h}{'x-ratelimit-limit'} // '-' } @got], [(5) x 7],
        "$loc: X-RateLimit-Limit");
    is(scalar(grep { ($_->{h}{'x-ratelimit-reset'} // '') =~ /^\d{10}$/ } @got),
        7, "$loc: X-RateLimit-Reset");
    is_deeply([map { $_->{h}{'retry-after'} // '-' } @got[0 .. 4]], [('-') x 5],
        "$loc: no Retry-After on a pass");
    like($got[5]{h}{'retry-after'} // '', qr/^[1-9]\d*$/,
        "$loc: Retry-After on a local rejection");
}

# a token every 4.8 h; gcra: one request every 4.8 h
is($n->get('/tb/?key=a')->{h}{'retry-after'}, 17280, 'tb: Retry-After 17280');
is($n->get('/lb/?key=a')->{h}{'retry-after'}, 17280, 'lb: Retry-After 17280');

# the same local zone and limit zone: one count; another local zone: its own
is_deeply([run('/fw-too/?key=a', 1)], [expect(429, 'FAILED_LOCAL', 0)],
    'another location of the same local zone: the same count');
is_deeply([run('/fw-mine/?key=a', 6)],
    [expect(200, 'FAILED_LOCAL', 4, 3, 2, 1, 0), expect(503, 'FAILED_LOCAL', 0)],
    'local_zone=mine: a count of its own, rejected with redis_ratelimit_status 503');
is_deeply([run('/fw/?key=b', 6)],
    [expect(200, 'FAILED_LOCAL', 4, 3, 2, 1, 0), expect(429, 'FAILED_LOCAL', 0)],
    'another key: a count of its own');

# local_share=1/4 of 8r/d: 2 on this server
my @share = map { $n->get('/share/?key=s') } 1 .. 4;
is_deeply([map { brief($_) } @share],
    [expect(200, 'FAILED_LOCAL', 1, 0), expect(429, 'FAILED_LOCAL', 0, 0)],
    'local_share=1/4 of 8r/d: exactly 2 pass');
is($share[0]{h}{'x-ratelimit-limit'}, 2, 'local_share: X-RateLimit-Limit is the share');

# two limits: all or nothing, as in the script
is_deeply([run('/two/?key=c', 2)],
    [expect(200, 'FAILED_LOCAL', 0), expect(429, 'FAILED_LOCAL', 0)],
    'two limits: the tighter rejects');
is_deeply([run('/fw/?key=c', 5)], [expect(200, 'FAILED_LOCAL', 3, 2, 1, 0),
        expect(429, 'FAILED_LOCAL', 0)],
    'two limits: the rejected request consumed nothing from the other');

# dry run: counted and logged, never rejected
my @dry = map { $n->get('/dry/?key=d') } 1 .. 2;
is_deeply([map { brief($_) } @dry],
    [expect(200, 'FAILED_LOCAL', 0), expect(200, 'FAILED_LOCAL', 0)],
    'dry run: 200 and FAILED_LOCAL');
ok(!defined $dry[1]{h}{'retry-after'}, 'dry run: no Retry-After');

# fail open beside fail local
my @open = map { $n->get('/open/?key=o') } 1 .. 3;
is_deeply([map { brief($_) } @open], [(expect(200, 'FAILED_OPEN', '-')) x 3],
    'fail open location in the same server: FAILED_OPEN');
ok(!(grep { grep { /^x-ratelimit-|^retry-after$/ } keys %{ $_->{h} } } @open),
    'fail open: no rate limit headers');

# two workers, one count: many requests, one after another and at once
my @seq = map { $n->get('/many/?key=w') } 1 .. 20;
my @par = RRL::Test::http_parallel($n->port, ('/many/?key=w') x 30);
my @all = (@seq, @par);
is(scalar(grep { ($_->{status} // 0) == 200 } @all), 30,
    'two workers: exactly 30 of 50 pass');
is(scalar(grep { ($_->{status} // 0) == 429 } @all), 20, 'two workers: 20 rejected');
is(scalar(grep { ($_->{h}{'x-rl-status'} // '') ne 'FAILED_LOCAL' } @all), 0,
    'two workers: all FAILED_LOCAL');
my %remaining = map { ($_->{h}{'x-ratelimit-remaining'} // '-') => 1 }
    grep { ($_->{status} // 0) == 200 } @all;
is(scalar(keys %remaining), 30, 'two workers: every pass saw its own remaining');
my %pids = map { ($_->{h}{'x-pid'} // '-') => 1 } @all;
is(scalar(keys %pids), 2, 'two workers: both answered');

# a full zone drops the least recently used keys: no error, and a dropped
# key starts over
my @tiny = map { brief($n->get("/tiny/?key=k$_")) } 1 .. 400;
is(scalar(grep { $_ ne '200 FAILED_LOCAL 0' } @tiny), 0,
    'a full zone: 400 keys pass once each');
is_deeply([run('/tiny/?key=k400', 1), run('/tiny/?key=k1', 1)],
    [expect(429, 'FAILED_LOCAL', 0), expect(200, 'FAILED_LOCAL', 0)],
    'a full zone: the newest key is kept, the oldest was dropped');

# a reload keeps the zones (same names and sizes), states included
$n->reload;
is_deeply([run('/fw/?key=a', 1), run('/share/?key=s', 1)],
    [expect(429, 'FAILED_LOCAL', 0), expect(429, 'FAILED_LOCAL', 0)],
    'after a reload: the local states are kept');

# the log says it was local
ok($n->grep_log(qr/\[error\] .*limiting requests by zone "fw" \(local\), key "a", rate 5r\/d, retry after \d+s/),
    'local rejection logged with "(local)"');
ok($n->grep_log(qr/\[error\] .*limiting requests, dry run, by zone "one" \(local\), key "d"/),
    'local dry-run rejection logged');

# Redis back: Redis decides again, from its own (empty) state

my $connected = () = $n->grep_log(qr/redis_ratelimit: connected to/);

$t->start_redis;

# both workers, each reconnecting on its own backoff
ok($n->wait_log(qr/redis_ratelimit: connected to/, $connected + 2, 5),
    'Redis back: both workers reconnected');
is(brief($n->get('/sw/?key=back')), '200 PASSED 4', 'Redis back: PASSED again');

is_deeply([run('/fw/?key=a', 2)], [expect(200, 'PASSED', 4, 3)],
    'Redis back: a key exhausted locally passes from Redis');
is($t->redis('GET', 'rrl:{fw:a}:fw') =~ /^\d+:2$/ ? 1 : 0, 1,
    'Redis back: the Redis key is written');
is_deeply([run('/share/?key=s', 1)], [expect(200, 'PASSED', 7)],
    'Redis back: local_share no longer applies');
is($n->get('/share/?key=s')->{h}{'x-ratelimit-limit'}, 8,
    'Redis back: X-RateLimit-Limit of the zone');

# a hung Redis: the timeout, then a local decision

$t->signal_redis('STOP');
my $hung = $n->get('/fw/?key=hung');
$t->signal_redis('CONT');
is(brief($hung), '200 FAILED_LOCAL 4', 'hung Redis: decided locally after the timeout');
ok($hung->{time} >= 0.09 && $hung->{time} < 1,
    sprintf('hung Redis: answered after the timeout (%.3f s)', $hung->{time}));

# configuration errors

sub conf_with {
    my ($lines) = @_;
    return <<"EOF";
http {
    redis_ratelimit_server 127.0.0.1:6379;
    redis_ratelimit_zone \$arg_k zone=z rate=5r/m;
    limit_req_zone \$arg_k zone=taken:1m rate=1r/s;
    server {
        listen 127.0.0.1:%%PORT%%;
$lines
    }
}
EOF
}

sub in_location {
    my ($line) = @_;
    return conf_with("        location / {\n            $line\n        }");
}

my $fail = '"redis_ratelimit_fail" directive';
my @bad = (
    ['bad mode', in_location('redis_ratelimit_fail x; # HERE'),
        qq{invalid value "x" in $fail, it must be "open", "closed" or "local" in FILE:LINE}],
    ['local_zone without a size', in_location('redis_ratelimit_fail local local_zone=x; # HERE'),
        qq{invalid value "local_zone=x" in $fail, it must be local_zone=NAME:SIZE in FILE:LINE}],
    ['local_zone without a name', in_location('redis_ratelimit_fail local local_zone=:1m; # HERE'),
        qq{invalid value "local_zone=:1m" in $fail, it must be local_zone=NAME:SIZE in FILE:LINE}],
    ['local_zone with a bad size', in_location('redis_ratelimit_fail local local_zone=x:big; # HERE'),
        qq{invalid value "local_zone=x:big" in $fail, it must be local_zone=NAME:SIZE in FILE:LINE}],
    ['local_zone too small', in_location('redis_ratelimit_fail local local_zone=x:16k; # HERE'),
        qq{invalid value "local_zone=x:16k" in $fail, local_zone must be at least 32k in FILE:LINE}],
    ['local_share of zero', in_location('redis_ratelimit_fail local local_share=1/0; # HERE'),
        qq{invalid value "1/0" in $fail, local_share must be 1/N with N a positive number in FILE:LINE}],
    ['local_share not 1/N', in_location('redis_ratelimit_fail local local_share=2/4; # HERE'),
        qq{invalid value "2/4" in $fail, local_share must be 1/N with N a positive number in FILE:LINE}],
    ['local_share not a number', in_location('redis_ratelimit_fail local local_share=1/x; # HERE'),
        qq{invalid value "1/x" in $fail, local_share must be 1/N with N a positive number in FILE:LINE}],
    ['local_share empty', in_location('redis_ratelimit_fail local local_share=; # HERE'),
        qq{invalid value "" in $fail, local_share must be 1/N with N a positive number in FILE:LINE}],
    ['local_share with open', in_location('redis_ratelimit_fail open local_share=1/2; # HERE'),
        qq{invalid parameter "local_share=1/2" in $fail, it is only valid with "local" in FILE:LINE}],
    ['local_zone with closed', in_location('redis_ratelimit_fail closed local_zone=x:1m; # HERE'),
        qq{invalid parameter "local_zone=x:1m" in $fail, it is only valid with "local" in FILE:LINE}],
    ['unknown parameter', in_location('redis_ratelimit_fail local share=1/2; # HERE'),
        qq{invalid parameter "share=1/2" in $fail in FILE:LINE}],
    ['local_zone twice', in_location('redis_ratelimit_fail local local_zone=a:1m local_zone=b:1m; # HERE'),
        qq{duplicate parameter "local_zone=b:1m" in $fail in FILE:LINE}],
    ['local_share twice', in_location('redis_ratelimit_fail local local_share=1/2 local_share=1/3; # HERE'),
        qq{duplicate parameter "local_share=1/3" in $fail in FILE:LINE}],
    # issue 25: was "invalid number of arguments", the directive took 3 words
    ['local_zone twice, with local_share', in_location('redis_ratelimit_fail local local_zone=a:1m local_share=1/2 local_zone=b:1m; # HERE'),
        qq{duplicate parameter "local_zone=b:1m" in $fail in FILE:LINE}],
    ['fail twice', in_location("redis_ratelimit_fail local;\n            redis_ratelimit_fail local; # HERE"),
        qq{"redis_ratelimit_fail" directive is duplicate in FILE:LINE}],
    ['local_zone reused with another size', conf_with(
            "        location /a/ { redis_ratelimit_fail local local_zone=x:1m; } # FIRST\n"
            . "        location /b/ { redis_ratelimit_fail local local_zone=x:2m; } # HERE"),
        qq{invalid value "local_zone=x:2m" in $fail, local_zone "x" has size 1m in FILE:FIRST in FILE:LINE}],
);

for my $case (@bad) {
    my ($name, $template, $want) = @$case;
    my ($out, $rc);
    ($out, $rc, undef, undef, $want) = $t->nginx_t_here($template, $want);

    isnt($rc, 0, "nginx -t, $name: fails");
    like($out, qr/^nginx: \[emerg\] \Q$want\E$/m, "nginx -t, $name: message")
        or diag("expected: nginx: [emerg] $want\ngot: $out");
}

{
    my ($out, $rc) = $t->nginx_t(in_location('redis_ratelimit_fail local local_zone=taken:1m;'));
    isnt($rc, 0, 'nginx -t, a zone of limit_req: fails');
    like($out, qr/the shared memory zone "taken" is already declared for a different use/,
        'nginx -t, a zone of limit_req: message');
}

my @good = (
    ['the default zone, inherited', "    redis_ratelimit_fail local;\n"],
    ['one zone, several locations, the default zone sized explicitly', conf_with(
        "        redis_ratelimit_fail local local_share=1/3;\n"
        . "        location /a/ { redis_ratelimit_fail local local_zone=x:1m; }\n"
        . "        location /b/ { redis_ratelimit_fail local local_zone=x:1m local_share=1/2; }\n"
        . "        location /c/ { redis_ratelimit_fail local local_zone=redis_ratelimit_local:64k; }\n"
        . "        location /d/ { redis_ratelimit_fail LOCAL; }\n"
        . "        location /e/ { redis_ratelimit_fail open; }")],
);
$good[0][1] = conf_with("        location / { }") =~ s/(    server \{)/$good[0][1]$1/r;

for my $case (@good) {
    my ($name, $template) = @$case;
    my ($out, $rc) = $t->nginx_t($template);
    is($rc, 0, "nginx -t, $name: passes") or diag($out);
}

$t->done_testing;
