#!/usr/bin/perl

# Periods: the rate syntax (s, m, h, d, nginx times such as 1m30s or
# 1500ms), fixed windows aligned on the Unix epoch and starting afresh at
# their end, and long periods up to the maximum of 365 days, which must
# limit like short ones with every algorithm; longer ones are refused by
# nginx -t.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(ceil floor);
use Test::More;
use Time::HiRes qw(sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $conf = "http {\n    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;\n";
my @zones = (
    [two_s => 'rate=3r/2s algorithm=fixed_window'],
    [ninety => 'rate=2r/1m30s algorithm=fixed_window'],
    [ms => 'rate=2r/1500ms algorithm=fixed_window'],
    [minute => 'rate=2r/m algorithm=fixed_window'],
    [day => 'rate=2r/d algorithm=fixed_window'],
    [year_sl => 'rate=2r/365d algorithm=sliding_log'],
    [year_fw => 'rate=2r/365d algorithm=fixed_window'],
    [week_fw => 'rate=2r/52w algorithm=fixed_window'],
    [year_tb => 'rate=2r/365d algorithm=token_bucket'],
    [year_lb => 'rate=2r/365d algorithm=leaky_bucket burst=1'],
    [year_sw => 'rate=2r/365d'],
    [year_tb2 => 'rate=1r/365d algorithm=token_bucket burst=2'],
    [year_lb2 => 'rate=1r/365d algorithm=gcra burst=1'],
);
$conf .= "    redis_ratelimit_zone \$arg_key zone=$_->[0] $_->[1];\n" for @zones;
$conf .= "    server {\n        listen 127.0.0.1:%%PORT%%;\n"
    . "        add_header X-RL-Status \$redis_ratelimit_status always;\n";
$conf .= "        location /$_->[0]/ {\n            alias %%TESTDIR%%/html/;\n"
    . "            redis_ratelimit zone=$_->[0];\n        }\n" for @zones;
$conf .= "    }\n}\n";
my $n = $t->start_nginx($conf);

# three requests; the first two must pass, the third be rejected
sub three {
    my ($inst, $uri) = @_;
    return map { my $r = $inst->get($uri);
                 join ' ', $r->{status} // 'none', $r->{h}{'x-rl-status'} // 'none' } 1 .. 3;
}

# 3r/2s: a window of 2 s aligned on the epoch, afresh at its end

my $wend = $t->wait_window(2, 1);
my @r = map { $n->get('/two_s/?key=w') } 1 .. 4;
is(join(' ', map { $_->{status} } @r), '200 200 200 429', '3r/2s: 3 pass, then 429');
is(join(' ', map { $_->{h}{'x-ratelimit-reset'} } @r), join(' ', ($wend) x 4),
    '3r/2s: Reset is the end of the 2 s window');
ok($r[3]{h}{'retry-after'} >= 1 && $r[3]{h}{'retry-after'} <= 2, '3r/2s: Retry-After 1 or 2');

sleep($wend - $t->redis_time + 0.05);

my $r = $n->get('/two_s/?key=w');
is($r->{status}, 200, '3r/2s: the next window starts afresh');
is($r->{h}{'x-ratelimit-remaining'}, 2, '3r/2s: Remaining 2 in the new window');
is($r->{h}{'x-ratelimit-reset'}, $wend + 2, '3r/2s: Reset of the new window');

# 1m30s: windows of 90 s

$wend = $t->wait_window(90, 2);
$r = $n->get('/ninety/?key=a');
is($r->{h}{'x-ratelimit-reset'}, $wend, '1m30s: Reset on a multiple of 90 s');
is($wend % 90, 0, '1m30s: aligned on the epoch');

# 1500ms: windows of 1.5 s, Reset rounded up

$wend = $t->wait_window(1.5, 0.5);
$r = $n->get('/ms/?key=a');
is($r->{h}{'x-ratelimit-reset'}, ceil($wend), '1500ms: Reset is the window end rounded up');

# m and d

$wend = $t->wait_window(60, 2);
$r = $n->get('/minute/?key=a');
is($r->{h}{'x-ratelimit-reset'}, $wend, 'r/m: Reset on the minute');

my $dend = (floor($t->redis_time / 86400) + 1) * 86400;
$r = $n->get('/day/?key=a');
is($r->{h}{'x-ratelimit-reset'}, $dend, 'r/d: Reset at midnight UTC');

# long periods limit like short ones

is(join(', ', three($n, '/year_sl/?key=a')), '200 PASSED, 200 PASSED, 429 REJECTED',
    'rate=2r/365d sliding_log: limits');
is(join(', ', three($n, '/year_fw/?key=a')), '200 PASSED, 200 PASSED, 429 REJECTED',
    'rate=2r/365d fixed_window: limits');
is(join(', ', three($n, '/week_fw/?key=a')), '200 PASSED, 200 PASSED, 429 REJECTED',
    'rate=2r/52w fixed_window: limits');
is(join(', ', three($n, '/year_tb/?key=a')), '200 PASSED, 200 PASSED, 429 REJECTED',
    'rate=2r/365d token_bucket: limits');
is(join(', ', three($n, '/year_lb/?key=a')), '200 PASSED, 200 PASSED, 429 REJECTED',
    'rate=2r/365d leaky_bucket burst=1: limits');

# State that outlives PERIOD: the sliding window's Reset (the end of the
# next window), a bucket larger than N (B * PERIOD / N to refill), a GCRA
# burst ((B + 1) * PERIOD / N): replies carry such durations, and they limit.

is(join(', ', three($n, '/year_sw/?key=a')), '200 PASSED, 200 PASSED, 429 REJECTED',
    'rate=2r/365d sliding_window (the default): limits');
is(join(', ', three($n, '/year_tb2/?key=a')), '200 PASSED, 200 PASSED, 429 REJECTED',
    'rate=1r/365d token_bucket burst=2: limits');
is(join(', ', three($n, '/year_lb2/?key=a')), '200 PASSED, 200 PASSED, 429 REJECTED',
    'rate=1r/365d gcra burst=1: limits');
is(scalar($n->grep_log(qr/unexpected script reply/)), 0,
    'no reply taken for a bad one');

my ($out, $rc) = $t->nginx_t($conf);
is($rc, 0, 'nginx -t accepts every one of these rates') or diag($out);

# state kept for more than 100 years: refused
{
    my $bad = "http {\n    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;\n"
        . "    redis_ratelimit_zone \$arg_key zone=z rate=1r/365d algorithm=token_bucket burst=101;\n}\n";
    my ($out, $rc, $file, $text) = $t->nginx_t($bad);
    my $line = RRL::Test::line_of($text, qr/zone=z/);
    isnt($rc, 0, 'token_bucket of 101 years to refill: refused');
    like($out, qr/"rate=1r\/365d" with "burst=101" keeps state for more than 100 years in "redis_ratelimit_zone" directive in \Q$file\E:$line$/m,
        'token_bucket of 101 years: message');
}

for my $rate ('2r/366d', '2r/365d1ms', '2r/53w') {
    my $bad = "http {\n    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;\n"
        . "    redis_ratelimit_zone \$arg_key zone=z rate=$rate;\n}\n";
    my ($out, $rc, $file, $text) = $t->nginx_t($bad);
    my $line = RRL::Test::line_of($text, qr/zone=z/);
    isnt($rc, 0, "rate=$rate: longer than 365 days, refused");
    like($out, qr/invalid rate "rate=\Q$rate\E" in "redis_ratelimit_zone" directive in \Q$file\E:$line$/m,
        "rate=$rate: message names the rate and the line");
}

$t->done_testing;
