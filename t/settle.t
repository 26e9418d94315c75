#!/usr/bin/perl

# settle=VALUE of "redis_ratelimit" (issue 17): a request reserves its
# cost E up front, and its actual cost A (the upstream's
# X-Usage-Total-Tokens here) is settled in the log phase. A real upstream:
# a second server of the same nginx that answers with the header from the
# query string (/?usage=N), reached by proxy_pass; for the client that
# aborts, a Perl server (RRL::Upstream) sending a slow body after its
# header.
# - refund: estimate 100, actual 30: the next request sees 70 more
#   remaining than a control key whose settlement changed nothing, in
#   X-RateLimit-Remaining and RateLimit (fixed_window per hour: nothing
#   refills during the test); Redis's count is 30;
# - debt: estimate 100, actual 490 on a token bucket of 100r/s: the next
#   request is rejected with Retry-After 5; a retry one second before that
#   time is rejected, one on time passes;
# - $redis_ratelimit_cost (header and access log): the units charged up
#   front, "0" when rejected, none where nothing limits;
# - metrics: redis_ratelimit_settlements_total{zone,result} exact, with
#   its HELP, only for zones with settle=;
# - no header, garbage (and garbage over 32 bytes): settle_failed, the
#   estimate stays charged, the warning at most once a second per worker;
# - a rejection, real or dry run, settles nothing; a dry-run pass settles;
# - the deny cache learns a debt: the key's next requests are rejected by
#   this nginx without EVALSHA ("(cached)");
# - several limits on one request: each settled with its own value, one
#   without settle= untouched, one failing while the other settles;
# - a limit with an empty key is not settled;
# - a client that aborts mid-response (499): the settlement still happens.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use IO::Select;
use IO::Socket::INET;
use POSIX ();
use Socket qw(SOL_SOCKET SO_LINGER);
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Upstream;

my $t = RRL::Test->new;
$t->start_redis;

# the upstream whose response never ends (?hang=1), for the client abort
my $slow = RRL::Upstream->start($t);
my $slow_port = $slow->port;

my $conf = <<'EOF';
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=fw rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=tb rate=100r/s burst=100 algorithm=token_bucket;
    redis_ratelimit_zone $arg_key zone=dc rate=100r/h burst=100 algorithm=token_bucket;
    redis_ratelimit_zone $arg_key zone=dr rate=150r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=m2 rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=m3 rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=ab rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=plain rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_ek zone=ek rate=1000r/h algorithm=fixed_window;

    log_format settle '$uri?key=$arg_key $status $redis_ratelimit_status '
        'cost=$redis_ratelimit_cost usage=$upstream_http_x_usage_total_tokens';

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        access_log %%NGINX_DIR%%/settle.log settle;
        redis_ratelimit_headers both;
        add_header X-RL-Status $redis_ratelimit_status always;
        add_header X-RL-Cost $redis_ratelimit_cost always;

        location = /metrics { redis_ratelimit_metrics; }

        location /s/ {
            redis_ratelimit zone=fw cost=100 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
        location /c/ {
            redis_ratelimit zone=fw cost=100;
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
        location /tb/ {
            redis_ratelimit zone=tb cost=100 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
        location /tbc/ {
            redis_ratelimit zone=tb cost=100;
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
        location /dc/ {
            redis_ratelimit zone=dc cost=100 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
        location /dry/ {
            redis_ratelimit zone=dr cost=100 settle=$upstream_http_x_usage_total_tokens;
            redis_ratelimit_dry_run on;
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
        location /multi/ {
            redis_ratelimit zone=fw cost=100 settle=$upstream_http_x_usage_total_tokens;
            redis_ratelimit zone=m2 cost=10 settle=$arg_act;
            redis_ratelimit zone=m3 cost=5;
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
        location /ek/ {
            redis_ratelimit zone=fw cost=100 settle=$upstream_http_x_usage_total_tokens;
            redis_ratelimit zone=ek cost=10 settle=$arg_act;
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
        location /ab/ {
            redis_ratelimit zone=ab cost=100 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%SLOW_PORT%%/;
        }
        location /plain/ {
            redis_ratelimit zone=plain cost=100;
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
        location /none/ {
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
    }

    # the upstream: X-Usage-Total-Tokens from ?usage= (none when empty)
    server {
        listen 127.0.0.1:%%PORT_1%%;
        root %%TESTDIR%%/html;
        add_header X-Usage-Total-Tokens $arg_usage always;
    }
}
EOF
$conf =~ s/%%SLOW_PORT%%/$slow_port/g;

my $n = $t->start_nginx($conf);

my $H = 3600;
my $w = $t->wait_window($H, 120) / $H - 1;

# the count of a fixed_window state, 0 when none
sub fw_count { $t->fw_count("rrl:{$_[0]:$_[1]}:fw", $w) }

# the settlements of a zone: (settled, settle_failed), undef when absent
sub settlements {
    $n->zone_metrics('settlements_total', $_[0], 'result', qw(settled settle_failed));
}

# waits until a zone's settlements (both results) reach $total
sub wait_settled { $n->wait_settled(@_) }

# the settled and settle_failed counts of a zone, as "S F"
sub counts { join ' ', map { $_ // 'none' } settlements($_[0]) }

sub evalsha_calls { $t->commandstats->{evalsha} // 0 }

# the access log's last line of a request ("/s/?key=a")
sub log_line {
    my ($req) = @_;
    my @l = grep { /^\Q$req\E / } split /\n/,
        RRL::Test::read_file($n->dir . '/settle.log');
    return $l[-1] // '';
}

###########################################################################
# refund: estimate 100, actual 30

{
    is(counts('fw'), '0 0', 'metrics: the settle family of fw, zeros');

    my $r = $n->get('/s/?key=a&usage=30');
    is($r->{status}, 200, 'refund: 200 through the upstream');
    is($r->{body}, "OK\n", 'refund: the upstream\'s body');
    is($r->{h}{'x-ratelimit-remaining'}, 900,
        'refund: the response itself shows the estimate charged (900)');
    is($r->{h}{'x-rl-cost'}, 100, 'refund: $redis_ratelimit_cost is 100');
    ok(wait_settled('fw', 1), 'refund: settled');
    is(fw_count('fw', 'a'), 30, "refund: Redis's count is the actual 30");

    # the control: A == E, nothing to send
    $r = $n->get('/s/?key=b&usage=100');
    is($r->{status}, 200, 'control: 200');
    ok(wait_settled('fw', 2), 'control: settled');
    is(fw_count('fw', 'b'), 100, "control: Redis's count 100");
    is(counts('fw'), '2 0', 'metrics: 2 settled (a refund, one with nothing to send)');

    my $ra = $n->get('/c/?key=a');
    my $rb = $n->get('/c/?key=b');
    is($ra->{status} . ' ' . $rb->{status}, '200 200', 'the next requests pass');
    is($ra->{h}{'x-ratelimit-remaining'}, 870, 'refund: the next request sees 870');
    is($rb->{h}{'x-ratelimit-remaining'}, 800, 'control: the next request sees 800');
    is($ra->{h}{'x-ratelimit-remaining'} - $rb->{h}{'x-ratelimit-remaining'}, 70,
        'refund: 70 more remaining than the control');
    like($ra->{h}{'ratelimit'} // '', qr/^"fw";r=870;t=\d+$/,
        'refund: RateLimit r=870');
    like($rb->{h}{'ratelimit'} // '', qr/^"fw";r=800;t=\d+$/,
        'control: RateLimit r=800');
    is(counts('fw'), '2 0', 'metrics: a location without settle= counts none');
}

###########################################################################
# $redis_ratelimit_cost and the access log

{
    like(log_line('/s/?key=a'), qr/^\S+ 200 PASSED cost=100 usage=30$/,
        'access log: cost=100 of the settled request');
    my $r = $n->get('/none/?key=v&usage=5');
    is($r->{status}, 200, 'not limited: 200');
    ok(!exists $r->{h}{'x-rl-cost'}, 'not limited: no $redis_ratelimit_cost');
    like(log_line('/none/?key=v'), qr/^\S+ 200 \S* cost=- usage=5$/,
        'access log: not limited, cost "-" (not found)');
}

###########################################################################
# debt: estimate 100, actual 490: Retry-After exact

{
    my $r = $n->get('/tb/?key=d&usage=490');
    is($r->{status}, 200, 'debt: the request passes');
    is($r->{h}{'x-ratelimit-remaining'}, 0, 'debt: Remaining 0 (100 of 100 taken)');
    ok(wait_settled('tb', 1), 'debt: settled');
    is(counts('tb'), '1 0', 'debt: counted settled');

    # tokens: 0 - 390 at the settlement, refilled at 100/s: about 4.9 s
    # until 100 are back
    my $t0 = time;
    $r = $n->get('/tbc/?key=d');
    my $t1 = time;
    is($r->{status}, 429, 'debt: the next request is rejected');
    is($r->{h}{'x-rl-cost'}, 0, 'debt: $redis_ratelimit_cost "0" when rejected');
    is($r->{h}{'x-ratelimit-remaining'}, 0, 'debt: Remaining 0');
    my $ra = $r->{h}{'retry-after'} // 0;
    is($ra, 5, 'debt: Retry-After 5 (490 units at 100/s from -390)');
    like($r->{h}{'ratelimit'} // '', qr/^"tb";r=0;t=5$/, 'debt: RateLimit t=5');

    # one second earlier than told: rejected
    my $early = $t1 + $ra - 1 - time;
    sleep $early if $early > 0;
    $r = $n->get('/tbc/?key=d');
    is($r->{status}, 429, 'debt: one second before Retry-After: rejected');

    # on time: passes
    my $on = $t1 + $ra - time;
    sleep $on if $on > 0;
    $r = $n->get('/tbc/?key=d');
    is($r->{status}, 200, 'debt: on time (Retry-After): passes');
    ok(time - $t0 < $ra + 1, 'debt: the retries were on time');
}

###########################################################################
# the deny cache learns a debt

{
    my $r = $n->get('/dc/?key=e&usage=500');
    is($r->{status}, 200, 'deny cache: the request passes');
    ok(wait_settled('dc', 1), 'deny cache: settled');
    is(counts('dc'), '1 0', 'deny cache: counted settled');
    sleep 0.1;
    my $calls = evalsha_calls();
    my $cached = () = $n->grep_log(qr/by zone "dc" \(cached\)/);
    my @r = map { $n->get('/dc/?key=e&usage=100') } 1 .. 3;
    is(join(' ', map { $_->{status} } @r), '429 429 429',
        'deny cache: the key\'s next requests rejected');
    is(evalsha_calls() - $calls, 0, 'deny cache: without EVALSHA');
    ok($n->wait_log(qr/by zone "dc" \(cached\)/, $cached + 3, 2),
        'deny cache: logged (cached)');
    # 500 - 100 = 400 owed beyond the empty bucket: 5 h to 100 tokens
    my $ra = $r[0]{h}{'retry-after'} // 0;
    ok($ra > 5 * 3600 - 60 && $ra <= 5 * 3600,
        "deny cache: Retry-After of the debt, about 5 h ($ra)");
    is(counts('dc'), '1 0', 'deny cache: rejections settle nothing');
}

###########################################################################
# no header, garbage: settle_failed, the estimate stays charged

{
    my ($s0, $f0) = settlements('fw');
    sleep 1.1;    # the last warning (if any) more than a second ago
    my $r = $n->get('/s/?key=nh');
    is($r->{status}, 200, 'no header: 200');
    ok(wait_settled('fw', $s0 + $f0 + 1), 'no header: counted');
    is(counts('fw'), "$s0 " . ($f0 + 1), 'no header: settle_failed');
    is(fw_count('fw', 'nh'), 100, 'no header: the estimate stays charged');
    ok($n->wait_log(qr/redis_ratelimit: settle=\$upstream_http_x_usage_total_tokens of zone "fw" is "": not a number, the estimate 100 stays charged/, 1, 2),
        'no header: the warning');
    is(scalar($n->grep_log(qr/\[warn\] .*redis_ratelimit: settle=.* is "": not a number/)), 1,
        'no header: the warning at warn');
    is($n->get('/c/?key=nh')->{h}{'x-ratelimit-remaining'}, 800,
        'no header: the next request sees 800');

    sleep 1.1;
    $r = $n->get('/s/?key=g&usage=12abc');
    is($r->{status}, 200, 'garbage: 200');
    ok(wait_settled('fw', $s0 + $f0 + 2), 'garbage: counted');
    is(counts('fw'), "$s0 " . ($f0 + 2), 'garbage: settle_failed');
    is(fw_count('fw', 'g'), 100, 'garbage: the estimate stays charged');
    ok($n->wait_log(qr/redis_ratelimit: settle=\$upstream_http_x_usage_total_tokens of zone "fw" is "12abc": not a number, the estimate 100 stays charged/, 1, 2),
        'garbage: the warning');

    for my $bad ('-30', '3.5', '+30', '30%20', '99999999999999999999') {
        my $r2 = $n->get("/s/?key=g2&usage=$bad");
        is($r2->{status}, 200, "garbage \"$bad\": 200");
    }
    ok(wait_settled('fw', $s0 + $f0 + 7), 'more garbage: counted');
    is(counts('fw'), "$s0 " . ($f0 + 7), 'more garbage: 5 more settle_failed');
    is(fw_count('fw', 'g2'), 500, 'more garbage: every estimate stays charged');

    # a long text: truncated to 32 bytes; at most once a second
    sleep 1.1;
    my $before = () = $n->grep_log(qr/redis_ratelimit: settle=/);
    my $long = 'x' x 40;
    my $start = time;
    $n->get("/s/?key=g3&usage=$long") for 1 .. 5;
    my $took = time - $start;
    ok(wait_settled('fw', $s0 + $f0 + 12), 'long garbage: counted');
    my @lines = $n->grep_log(qr/redis_ratelimit: settle=/);
    my @new = @lines[$before .. $#lines];
    ok(@new >= 1 && @new <= ($took < 1 ? 2 : 5),
        'long garbage: 5 failures logged at most once a second ('
        . scalar(@new) . ' lines)');
    like($new[0] // '', qr/ is "x{32}": not a number/,
        'long garbage: the text truncated to 32 bytes');
}

###########################################################################
# a rejection settles nothing; dry run: a pass settles, a rejection not

{
    my ($s0, $f0) = settlements('fw');
    # 950 of 1000 taken: a request of 100 does not fit
    is($t->redis('SET', "rrl:{fw:x}:fw", "$w:950", 'EX', 3600), 'OK',
        'key x at 950');
    my $r = $n->get('/s/?key=x&usage=10');
    is($r->{status}, 429, 'rejected: 429');
    is($r->{h}{'x-rl-cost'}, 0, 'rejected: $redis_ratelimit_cost 0');
    sleep 0.3;
    is(counts('fw'), "$s0 $f0", 'rejected: no settlement counted');
    is(fw_count('fw', 'x'), 950, 'rejected: Redis unchanged');
    like(log_line('/s/?key=x'), qr/^\S+ 429 REJECTED cost=0 usage=-$/,
        'access log: rejected, cost=0');

    $r = $n->get('/dry/?key=y&usage=100');
    is($r->{h}{'x-rl-status'}, 'PASSED', 'dry run: the first passes');
    $r = $n->get('/dry/?key=y&usage=10');
    is($r->{h}{'x-rl-status'}, 'REJECTED_DRY_RUN',
        'dry run: the second would be rejected (200 of 150)');
    is($r->{status}, 200, 'dry run: served');
    is($r->{h}{'x-rl-cost'}, 0, 'dry run rejection: $redis_ratelimit_cost 0');
    sleep 0.3;
    is(counts('dr'), '1 0', 'dry run: the pass settled, the rejection not');
    is(fw_count('dr', 'y'), 100, 'dry run: the rejection refunded nothing');

    $r = $n->get('/dry/?key=z&usage=40');
    is($r->{h}{'x-rl-status'}, 'PASSED', 'dry run: a pass');
    is($r->{h}{'x-rl-cost'}, 100, 'dry run pass: $redis_ratelimit_cost 100');
    ok(wait_settled('dr', 2), 'dry run: settled');
    is(fw_count('dr', 'z'), 40, 'dry run: the pass refunded to 40');
}

###########################################################################
# several limits on one request

{
    my ($s0, $f0) = settlements('fw');
    my @m20 = settlements('m2');
    is(join(' ', map { $_ // 'none' } @m20), '0 0', 'metrics: m2 has the family');
    my ($m) = $n->metrics;
    ok(!grep({ /^redis_ratelimit_settlements_total\{zone="(m3|plain)"/ } keys %$m),
        'metrics: no settle family for zones without settle=');

    my $r = $n->get('/multi/?key=k&usage=30&act=25');
    is($r->{status}, 200, 'several limits: 200');
    ok(wait_settled('m2', 1) && wait_settled('fw', $s0 + $f0 + 1),
        'several limits: settled');
    is(fw_count('fw', 'k'), 30, 'several limits: fw settled to 30');
    is(fw_count('m2', 'k'), 25, 'several limits: m2 settled to 25 (a charge)');
    is(fw_count('m3', 'k'), 5, 'several limits: m3 (no settle=) stays 5');
    is(counts('m2'), '1 0', 'several limits: m2 settled');
    is(counts('fw'), ($s0 + 1) . " $f0", 'several limits: fw settled');

    $r = $n->get('/multi/?key=k2&usage=30&act=zz');
    is($r->{status}, 200, 'one value garbage: 200');
    ok(wait_settled('m2', 2) && wait_settled('fw', $s0 + $f0 + 2),
        'one value garbage: counted');
    is(fw_count('fw', 'k2'), 30, 'one value garbage: fw settled to 30');
    is(fw_count('m2', 'k2'), 10, 'one value garbage: m2 keeps the estimate 10');
    is(counts('m2'), '1 1', 'one value garbage: m2 settle_failed');
    is(counts('fw'), ($s0 + 2) . " $f0", 'one value garbage: fw settled');
}

###########################################################################
# a limit with an empty key is not settled

{
    my ($s0, $f0) = settlements('fw');
    my $r = $n->get('/s/?usage=30');
    is($r->{h}{'x-rl-status'}, 'PASSED', 'empty key: PASSED');
    my $r2 = $n->get('/ek/?key=ek1&usage=30&act=25');
    is($r2->{h}{'x-rl-status'}, 'PASSED', 'one key empty of two: PASSED');
    ok(wait_settled('fw', $s0 + $f0 + 1), 'one key empty of two: settled');
    sleep 0.3;
    is(counts('fw'), ($s0 + 1) . " $f0",
        'empty key: not settled; the other request\'s fw limit settled');
    is(counts('ek'), '0 0', 'the limit with an empty key: not settled');
    is(fw_count('fw', 'ek1'), 30, 'one key empty of two: fw settled to 30');
    is(scalar(() = $t->redis('KEYS', 'rrl:{ek:*')), 0, 'no state for an empty key');
}

###########################################################################
# metrics: the family's HELP and TYPE

{
    my ($m, $r) = $n->metrics;
    like($r->{body}, qr/^# HELP redis_ratelimit_settlements_total Settlements \(settle=\) of the zone's limits, by result: settled \(refunded, charged, or nothing to settle\), settle_failed \(no number in the value, or Redis failed: the estimate stays charged\)\.$/m,
        'metrics: HELP');
    like($r->{body}, qr/^# TYPE redis_ratelimit_settlements_total counter$/m,
        'metrics: a counter');
    my @zones = sort map { /zone="([^"]+)",result="settled"/ ? $1 : () }
        grep { /^redis_ratelimit_settlements_total\{/ } keys %$m;
    is("@zones", 'ab dc dr ek fw m2 tb', 'metrics: the zones with settle=');
    my @series = grep { /^redis_ratelimit_settlements_total\{/ } keys %$m;
    is(scalar @series, 14, 'metrics: two series a zone');
}

###########################################################################
# a client that aborts mid-response: the settlement still happens

{
    my $s = RRL::Test::http_send($n->port, 'GET', '/ab/?key=q&usage=30&hang=1');
    ok($s, 'client abort: connected');
    my $head = '';
    my $sel = IO::Select->new($s);
    my $end = time + 5;
    while ($head !~ /\r\n\r\n/ && time < $end) {
        last unless $sel->can_read($end - time);
        last unless sysread($s, $head, 4096, length $head);
    }
    like($head, qr{^HTTP/1\.\d 200}, 'client abort: the response has begun');
    setsockopt($s, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
    close $s;
    ok(wait_settled('ab', 1), 'client abort: settled');
    is(counts('ab'), '1 0', 'client abort: counted settled, once');
    is(fw_count('ab', 'q'), 30, 'client abort: refunded to 30');
    my $deadline = time + 3;
    sleep 0.05 while time < $deadline && log_line('/ab/?key=q') eq '';
    # 499, or 200 when nginx had sent part of the response already
    like(log_line('/ab/?key=q'), qr/^\S+ (?:499|200) PASSED cost=100 usage=30$/,
        'client abort: logged, cost 100, usage 30');
    sleep 0.3;
    is(counts('ab'), '1 0', 'client abort: once only');
}

my @crash = $n->grep_log(qr/\[(alert|crit|emerg)\]|exited on signal/);
is_deeply(\@crash, [], 'no alert, crit or crash in error.log');

$t->done_testing;
