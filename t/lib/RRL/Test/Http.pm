package RRL::Test::Http;

# The tests' HTTP client: HTTP/1.0 requests to a loopback port, one
# connection each, and their responses parsed. RRL::Test exports these
# functions under its own name too (RRL::Test::http_send, ...); an nginx
# instance's get/http/parallel/abort call them with its port.
#
# A response: {status (undef when the connection closed with no response),
# reason, h => {lc name => last value}, hl => [[name, value], ...], n => {lc
# name => count}, body, raw, time (seconds), error}

use strict;
use warnings;

use Exporter qw(import);
use IO::Select;
use IO::Socket::INET;
use Socket qw(SOL_SOCKET SO_LINGER);
use Time::HiRes qw(time sleep);

our @EXPORT_OK = qw(http http_request_text http_send http_read
    parse_response http_parallel http_burst http_abort);

# http($port, $method, $uri, headers => {...} or [...], timeout => 5,
# body => ...): one request on its own connection; the response

sub http {
    my ($port, $method, $uri, %o) = @_;
    my $s = http_send($port, $method, $uri, %o) or return {
        status => undef, error => "connect: $!", h => {}, n => {}, hl => [],
        body => '', raw => '', time => 0 };
    return http_read($s, %o);
}

sub http_request_text {
    my ($method, $uri, %o) = @_;
    my @h = ref $o{headers} eq 'HASH' ? %{ $o{headers} }
          : ref $o{headers} eq 'ARRAY' ? @{ $o{headers} } : ();
    my $req = "$method $uri HTTP/1.0\r\nHost: localhost\r\n";
    while (my ($k, $v) = splice @h, 0, 2) {
        $req .= "$k: $v\r\n";
    }
    $req .= "Content-Length: " . length($o{body}) . "\r\n" if defined $o{body};
    $req .= "\r\n";
    $req .= $o{body} if defined $o{body};
    return $req;
}

# http_send(...): the request sent, its connection (undef when it could
# not connect) to give to http_read
sub http_send {
    my ($port, $method, $uri, %o) = @_;
    my $start = time;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Proto => 'tcp', Timeout => 5) or return undef;
    binmode $s;
    $s->autoflush(1);
    ${*$s}{rrl_start} = $start;
    my $req = http_request_text($method, $uri, %o);
    my $off = 0;
    while ($off < length $req) {
        my $w = syswrite($s, $req, length($req) - $off, $off);
        last unless defined $w;
        $off += $w;
    }
    return $s;
}

# http_read($s, timeout => 5): the response, read until the peer closes
sub http_read {
    my ($s, %o) = @_;
    my $timeout = $o{timeout} // 5;
    my $start = ${*$s}{rrl_start} // time;
    my $deadline = time + $timeout;
    my ($raw, $error) = ('', undef);
    my $sel = IO::Select->new($s);

    while (1) {
        my $left = $deadline - time;
        if ($left <= 0) { $error = 'timeout'; last; }
        next unless $sel->can_read($left);
        my $n = sysread($s, my $buf, 65536);
        if (!defined $n) { $error = "read: $!"; last; }
        last if $n == 0;
        $raw .= $buf;
    }
    my $elapsed = time - $start;
    close $s;

    my $r = parse_response($raw);
    $r->{time} = $elapsed;
    $r->{error} //= $error;
    return $r;
}

sub parse_response {
    my ($raw) = @_;
    my $r = { status => undef, reason => undef, h => {}, n => {}, hl => [],
        body => '', raw => $raw };
    return $r if $raw eq '';

    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    my @lines = split /\r\n/, $head;
    my $sl = shift @lines // '';
    if ($sl =~ m{^HTTP/\d\.\d (\d{3})(?: (.*))?$}) {
        $r->{status} = $1 + 0;
        $r->{reason} = $2;
    } else {
        $r->{error} = "bad status line: $sl";
    }
    for (@lines) {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        push @{ $r->{hl} }, [$k, $v];
        $r->{h}{lc $k} = $v;
        $r->{n}{lc $k}++;
    }
    $r->{body} = $body // '';
    return $r;
}

# http_parallel($port, @uris): sends every request before reading any reply
# (one connection each); returns the responses in the same order

sub http_parallel {
    my ($port, @uris) = @_;
    my @s = map { http_send($port, 'GET', $_) } @uris;
    return map { $_ ? http_read($_) : { status => undef, error => 'connect',
        h => {}, n => {}, hl => [], body => '', raw => '' } } @s;
}

# http_burst([$port, $uri], ...): sends every GET at once, one connection
# each, and reads them all together; the responses in the same order, each
# with t: its completion in seconds from the first send (99: none in 10 s)

sub http_burst {
    my @req = @_;
    my $t0 = time;
    my @s = map { http_send($_->[0], 'GET', $_->[1]) } @req;
    my (%raw, %done);
    my $sel = IO::Select->new(grep { defined } @s);
    my $deadline = $t0 + 10;
    while ($sel->count && time < $deadline) {
        for my $s ($sel->can_read($deadline - time)) {
            my $got = sysread($s, my $buf, 65536);
            if ($got) {
                $raw{ fileno $s } .= $buf;
                next;
            }
            $done{ fileno $s } = time - $t0;
            $sel->remove($s);
        }
    }
    my @r;
    for my $s (@s) {
        my $r = parse_response($s ? $raw{ fileno $s } // '' : '');
        $r->{t} = $s ? $done{ fileno $s } // 99 : 99;
        close $s if $s;
        push @r, $r;
    }
    return @r;
}

# opens a connection, sends a request and resets the connection (RST)
# without reading the response: a client that goes away
sub http_abort {
    my ($port, $uri, $delay) = @_;
    my $s = http_send($port, 'GET', $uri) or return;
    sleep $delay if $delay;
    setsockopt($s, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
    close $s;
}

1;
