#!/usr/bin/perl

# redis_ratelimit_metrics: the Prometheus exposition, counted by two
# workers into one shared memory zone: exact request counts by zone and
# status (passed, rejected, also by the deny cache, dry run, failed open,
# failed closed), Redis errors by kind, the RTT histogram, the gauges; the
# counts survive a reload, a zone removed is not reported, one added starts
# at 0; the whole output passes "promtool check metrics".

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IPC::Open3;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $conf = <<'EOF2';
worker_processes 2;

http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=pass rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=lim rate=3r/h algorithm=fixed_window;
    %%ZONES%%

    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        root %%TESTDIR%%/html;
        add_header X-Pid $pid always;
        add_header X-RL-Status $redis_ratelimit_status always;

        location /pass { redis_ratelimit zone=pass; try_files /index.html =404; }
        location /lim { redis_ratelimit zone=lim; try_files /index.html =404; }
        location /dry {
            redis_ratelimit zone=dry;
            redis_ratelimit_dry_run on;
            try_files /index.html =404;
        }
        location /closed {
            redis_ratelimit zone=pass;
            redis_ratelimit_fail closed;
            try_files /index.html =404;
        }
        location /new { redis_ratelimit zone=new; try_files /index.html =404; }

        location = /metrics { redis_ratelimit_metrics; }
    }
}
EOF2

my $dry = 'redis_ratelimit_zone $arg_key zone=dry rate=1r/h algorithm=fixed_window;';
my $new = 'redis_ratelimit_zone $arg_key zone=new rate=5r/h algorithm=fixed_window;';

sub conf {
    my ($zones, %o) = @_;
    (my $c = $conf) =~ s/%%ZONES%%/$zones/;
    $c =~ s/^.*location \/new.*\n//m unless $zones =~ /zone=new/;
    $c =~ s/^\s*location \/dry \{.*?\n\s*\}\n//ms unless $zones =~ /zone=dry/;
    return $c;
}

my $n = $t->start_nginx(conf($dry));

my %pids;

sub get {
    my ($uri) = @_;
    my $r = $n->get($uri);
    $pids{ $r->{h}{'x-pid'} }++ if defined $r->{h}{'x-pid'};
    return $r;
}

# the metrics as { 'name{labels}' => value }, and the text
sub metrics { $n->metrics }

sub req { my ($zone, $status) = @_;
    "redis_ratelimit_requests_total{zone=\"$zone\",status=\"$status\"}" }

# traffic of exact outcomes

my @s;
push @s, get("/pass?key=p$_")->{status} for 1 .. 20;
is(scalar(grep { $_ == 200 } @s), 20, '20 passed in zone pass');

@s = map { get('/lim?key=l')->{h}{'x-rl-status'} } 1 .. 6;
is("@s", 'PASSED PASSED PASSED REJECTED REJECTED REJECTED',
    'zone lim: 3 passed, 3 rejected (Redis, then deny cache)');

@s = map { get('/dry?key=d')->{h}{'x-rl-status'} } 1 .. 4;
is("@s", 'PASSED REJECTED_DRY_RUN REJECTED_DRY_RUN REJECTED_DRY_RUN',
    'zone dry: 1 passed, 3 rejected in dry run');

cmp_ok(scalar(keys %pids), '>=', 2, 'requests served by both workers');

my ($m, $r) = metrics();
is($r->{status}, 200, 'metrics: 200');
is($r->{h}{'content-type'}, 'text/plain; version=0.0.4; charset=utf-8',
    'metrics: Content-Type of the text format 0.0.4');

my %expect = (
    req('pass', 'passed') => 20, req('pass', 'rejected') => 0,
    req('lim', 'passed') => 3, req('lim', 'rejected') => 3,
    req('dry', 'passed') => 1, req('dry', 'rejected_dry_run') => 3,
    req('dry', 'rejected') => 0, req('lim', 'failed_open') => 0,
);
is($m->{$_}, $expect{$_}, "$_ $expect{$_}") for sort keys %expect;

# every worker answers the same totals
my @seen;
for (1 .. 8) {
    my ($mm) = metrics();
    push @seen, join ',', map { $mm->{$_} // 'none' } sort keys %expect;
}
is(scalar(keys %{{ map { $_ => 1 } @seen }}), 1,
    'the same totals from every worker');

# the gauges are published by each worker every second
sleep 1.2;
($m) = metrics();
is($m->{'redis_ratelimit_connections'}, 2, 'connections: 1 a worker');
is($m->{'redis_ratelimit_circuits{state="closed"}'}, 2, 'circuits closed: 2');
is($m->{'redis_ratelimit_circuits{state="open"}'}, 0, 'circuits open: 0');
is($m->{'redis_ratelimit_parked_requests'}, 0, 'parked: 0');

my $count = $m->{'redis_ratelimit_redis_rtt_seconds_count'};
cmp_ok($count, '>=', 1, "rtt histogram count $count");
is($m->{'redis_ratelimit_redis_rtt_seconds_bucket{le="+Inf"}'}, $count,
    'rtt: +Inf bucket = count');

# a reload keeps the counts; a removed zone is not reported, an added one
# starts at 0

$n->reload(conf($new));
($m) = metrics();
is($m->{ req('pass', 'passed') }, 20, 'after reload: pass passed 20');
is($m->{ req('lim', 'rejected') }, 3, 'after reload: lim rejected 3');
ok(!exists $m->{ req('dry', 'passed') }, 'after reload: zone dry removed');
is($m->{ req('new', 'passed') }, 0, 'after reload: zone new at 0');
is($m->{'redis_ratelimit_redis_rtt_seconds_count'}, $count,
    'after reload: rtt count kept');

get('/new?key=n');
$n->reload(conf("$new\n    $dry"));
($m) = metrics();
is($m->{ req('new', 'passed') }, 1, 'second reload: new passed 1');
is($m->{ req('dry', 'rejected_dry_run') }, 0, 'zone dry added back: at 0');

# Redis errors: NOSCRIPT after SCRIPT FLUSH, retried: passed. Counted
# from here: a worker's first request may have overtaken its connection's
# SCRIPT LOAD on this Redis, fresh at the start (the load waits for the
# handshake's replies), and had a NOSCRIPT of its own, retried as well.

my $noscript = $m->{'redis_ratelimit_redis_errors_total{kind="noscript"}'} // 0;
$t->redis('SCRIPT', 'FLUSH');
is(get('/pass?key=ns')->{h}{'x-rl-status'}, 'PASSED', 'after SCRIPT FLUSH: PASSED');
($m) = metrics();
is($m->{'redis_ratelimit_redis_errors_total{kind="noscript"}'} - $noscript, 1,
    "errors: noscript 1 after SCRIPT FLUSH ($noscript before it)");

# Redis down: failed open and failed closed, exact

$t->stop_redis;
$n->wait_log(qr/redis_ratelimit: .*(lost|closed|refused|failed)/, 2, 5);
sleep 0.2;

@s = map { get("/pass?key=o$_")->{h}{'x-rl-status'} } 1 .. 5;
is("@s", join(' ', ('FAILED_OPEN') x 5), '5 failed open');
@s = map { get("/closed?key=c$_")->{status} } 1 .. 4;
is("@s", '429 429 429 429', '4 failed closed');

sleep 1.2;
($m, $r) = metrics();
is($m->{ req('pass', 'failed_open') }, 5, 'pass failed_open 5');
is($m->{ req('pass', 'failed_closed') }, 4, 'pass failed_closed 4');
is($m->{ req('pass', 'passed') }, 21, 'pass passed still 21');
is($m->{'redis_ratelimit_redis_errors_total{kind="connection"}'}, 9,
    'errors: connection 9 (the calls not made)');
is($m->{'redis_ratelimit_connections'}, 0, 'connections: 0');

# the whole output, as Prometheus reads it

SKIP: {
    my $promtool = RRL::Test::which('promtool');
    skip 'promtool not installed (Debian package "prometheus", '
        . 'scripts/install-deps.sh installs it): output not validated', 1
        unless $promtool;

    my $pid = open3(my $in, my $out, undef, $promtool, 'check', 'metrics');
    print $in $r->{body};
    close $in;
    my $report = do { local $/; <$out> } // '';
    waitpid $pid, 0;
    is($? >> 8, 0, 'promtool check metrics: no problem') or diag $report;
}

$t->done_testing;
