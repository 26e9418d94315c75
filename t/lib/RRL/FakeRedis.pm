package RRL::FakeRedis;

# A fake Redis for injecting malformed, wrong or slow replies into the
# module (real behaviour is tested against a real redis-server). A forked
# child listens on a free loopback port, parses RESP arrays of bulk strings
# (what hiredis sends), answers the connection setup sensibly (CLIENT
# SETNAME, AUTH, SELECT: +OK; SCRIPT LOAD: the script's SHA-1) and answers
# each EVALSHA according to its behaviour:
#
#   valid             a correct "passed" reply: *(2+4k) :1 :<now_us> then
#                     :1 :4 :1000000 :0 per key
#   malformed         protocol garbage ("?x", "$abc", "*abc", ":12a", ...)
#   wrong_type        +OK, a bulk string, an integer, nil, an array of bulk
#                     strings, a nested array, arrays with a nil, status or
#                     error element (cycled)
#   wrong_count       arrays of integers of a wrong length (cycled)
#   bad_values        arrays of the right length with values a script never
#                     returns: decision 2, time <= 0 or absurd, negative
#                     remaining, negative or huge durations, inconsistent
#                     decisions (cycled)
#   huge_time         the right length and signs, a time at the end of
#                     int64 (9223372036854775807 us): adding a reset or
#                     retry duration to it overflows
#   huge_remaining    a "passed" reply with remaining 9223372036854775807
#   huge_bulk         alternately a 16 MB bulk string and one announced as
#                     512 MB but never completed (64 KB of it sent, then
#                     nothing more on that connection)
#   flood             a bulk string announced as 512 MB, 511 MB of it
#                     streamed as fast as the client reads, never completed
#   split             the valid reply, one byte per write, 1 ms apart
#   silent            reads, never answers EVALSHA
#   close             closes the connection on EVALSHA
#   error             -ERR something, with a \n and a forged log line
#                     (hiredis 1.x refuses \r and \n in an error line: a
#                     protocol error, "Bad simple string value"; for a
#                     module on 1.x the text has an ESC, \x1b, there:
#                     error_separator() says which)
#   noscript_forever  -NOSCRIPT for every EVALSHA, also after SCRIPT LOAD
#   extra             the valid reply followed at once (same write) by an
#                     unsolicited -ERR reply: nothing else is in flight then
#   extra_inflight    the first EVALSHA of a connection: the valid reply;
#                     the next ones: an extra -ERR, then the valid reply
#                     (what a client with a command in flight sees when the
#                     server sends one unsolicited error)
#   extra_status      the valid reply followed at once by an unsolicited +OK
#   moved, ask        -MOVED / -ASK to another address (a cluster node
#                     given as a single Redis)
#   ask_churn         a cluster of one node (CLUSTER SLOTS: every slot is
#                     its own) that answers every EVALSHA with an ASK to a
#                     new address (127.0.0.1, a port not used before)
#   clusterdown       -CLUSTERDOWN
#   readonly          -READONLY (a replica given as the primary)
#   auth_denied_late  AUTH refused (-WRONGPASS) after delay seconds, and
#                     every other command -NOAUTH, answered in order: a
#                     slow Redis given a wrong password
#
#   my $f = RRL::FakeRedis->new(behaviour => 'malformed', dir => $t->testdir);
#   $f->port; $f->stats;   # {EVALSHA => n, 'SCRIPT LOAD' => n, connections => n, ...}
#   $f->stop;

use strict;
use warnings;

use Carp qw(croak);
use Digest::SHA qw(sha1_hex);
use Errno qw(EAGAIN EWOULDBLOCK EINTR);
use IO::Select;
use IO::Socket::INET;
use POSIX ();
use Socket qw(IPPROTO_TCP TCP_NODELAY);
use Time::HiRes qw(time);

use RRL::Cluster ();
use RRL::Test ();

my %BEHAVIOURS = map { $_ => 1 } qw(valid malformed wrong_type wrong_count
    bad_values huge_time huge_remaining huge_bulk flood split silent close
    error noscript_forever extra extra_inflight extra_status moved ask
    ask_churn clusterdown readonly auth_denied_late);

sub behaviours { sort keys %BEHAVIOURS }

# the byte between the two lines of the 'error' behaviour's text: \n, or an
# ESC for a module on hiredis 1.x, whose reader refuses \r and \n there
sub error_separator { RRL::Test::hiredis_major() >= 1 ? "\x1b" : "\n" }

sub new {
    my ($class, %o) = @_;
    my $b = $o{behaviour} // 'valid';
    croak "unknown behaviour $b" unless $BEHAVIOURS{$b};
    croak 'dir required' unless defined $o{dir};

    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
        Proto => 'tcp', Listen => 128, ReuseAddr => 1)
        or croak "fake redis: cannot listen: $!";
    my $port = $l->sockport;
    my $stats = "$o{dir}/fakeredis-$port.stats";
    my $separator = $b eq 'error' ? error_separator() : "\n";

    my $pid = fork;
    croak "fork: $!" unless defined $pid;

    if ($pid == 0) {
        $SIG{TERM} = 'DEFAULT';
        open STDIN, '<', '/dev/null';
        eval { serve($l, $b, $stats, $o{delay} // 0.001, $separator) };
        print STDERR "fake redis: $@" if $@;
        POSIX::_exit(0);
    }

    close $l;
    return bless { pid => $pid, port => $port, behaviour => $b,
        stats_file => $stats }, $class;
}

sub port { $_[0]{port} }
sub pid { $_[0]{pid} }
sub behaviour { $_[0]{behaviour} }

sub stats {
    my ($self) = @_;
    my %s;
    open my $fh, '<', $self->{stats_file} or return \%s;
    while (<$fh>) {
        chomp;
        my ($k, $v) = split /\t/;
        $s{$k} = $v if defined $v;
    }
    return \%s;
}

sub stop {
    my ($self) = @_;
    my $pid = delete $self->{pid} or return;
    # from DESTROY at exit too: the child's status must not become the
    # test's exit status
    local $?;
    kill 'TERM', $pid;
    waitpid($pid, 0);
}

sub DESTROY { $_[0]->stop }


############################################################################
# the child

my $INT64_MAX = '9223372036854775807';
my $INT64_MIN = '-9223372036854775808';

sub now_us { sprintf '%d', time * 1e6 }

sub ints { join '', '*' . scalar(@_) . "\r\n", map { ":$_\r\n" } @_ }

sub valid_values {
    my ($nkeys, %o) = @_;
    return (1, now_us(), map { (1, 4, 1000000, 0) } 1 .. $nkeys);
}

sub valid_reply { ints(valid_values($_[0])) }

my @MALFORMED = ("?x\r\n", "\$abc\r\n", "*abc\r\n", ":12a\r\n",
    "*6\r\n:1\r\n?\r\n", "\x00\x01\x02\r\n", "+OK\n\n\n", "*-5\r\n:1\r\n",
    "\$-7\r\n");

sub wrong_type {
    my ($i, $nkeys) = @_;
    my @v = valid_values($nkeys);
    my $n = @v;
    my @list = (
        "+OK\r\n",
        "\$5\r\nhello\r\n",
        ":1\r\n",
        "\$-1\r\n",
        "*-1\r\n",
        "*$n\r\n" . join('', map { "\$" . length($_) . "\r\n$_\r\n" } @v),
        "*$n\r\n*1\r\n:1\r\n" . join('', map { ":$_\r\n" } @v[1 .. $#v]),
        "*$n\r\n" . join('', map { ":$_\r\n" } @v[0 .. $#v - 1]) . "\$-1\r\n",
        "*$n\r\n" . join('', map { ":$_\r\n" } @v[0 .. $#v - 1]) . "+OK\r\n",
        "*$n\r\n" . join('', map { ":$_\r\n" } @v[0 .. $#v - 1]) . "-ERR x\r\n",
        "*$n\r\n:1\r\n:" . now_us() . "\r\n"
            . join('', map { "*4\r\n:1\r\n:4\r\n:1000000\r\n:0\r\n" } 1 .. $nkeys)
            . join('', map { ":0\r\n" } 1 .. ($n - 2 - $nkeys)),
    );
    return $list[$i % @list];
}

sub wrong_count {
    my ($i, $nkeys) = @_;
    my @v = valid_values($nkeys);
    my @list = (
        ints(),
        ints(1),
        ints(@v[0, 1]),
        ints(@v[0 .. $#v - 1]),
        ints(@v, 0),
        ints(@v, @v),
        ints((1) x 1000),
    );
    return $list[$i % @list];
}

sub bad_values {
    my ($i, $nkeys) = @_;
    my $now = now_us();
    my @ok = (1, 4, 1000000, 0);
    my @rest = map { @ok } 2 .. $nkeys;
    my @list = (
        [2, $now, @ok],                        # decision not 0 or 1
        [-1, $now, @ok],
        [1, 0, @ok],                           # time 0
        [1, -$now, @ok],                       # negative time
        [1, $INT64_MIN, @ok],
        [1, $now, 1, -1, 1000000, 0],          # negative remaining
        [1, $now, 1, $INT64_MIN, 1000000, 0],
        [1, $now, 1, 4, -1, 0],                # negative reset
        [1, $now, 1, 4, $INT64_MAX, 0],        # huge reset
        [1, $now, 1, 4, 1000000, 5],           # passed with a retry
        [0, $now, 0, 0, 1000000, 0],           # rejected without a retry
        [0, $now, 0, 0, 1000000, -5],          # negative retry
        [0, $now, 0, 0, 1000000, $INT64_MAX],  # huge retry
        [1, $now, 0, 0, 1000000, 1000000],     # passed though a limit rejected
        [0, $now, 1, 4, 1000000, 0],           # rejected though all passed
        [1, $now, 2, 4, 1000000, 0],           # limit decision 2
    );
    my $v = $list[$i % @list];
    return ints(@$v, @rest);
}

# values a decoder that checks only signs accepts
sub huge_time {
    my ($i, $nkeys) = @_;
    my @rest = map { (1, 4, 1000000, 0) } 2 .. $nkeys;
    my @list = (
        [1, $INT64_MAX, 1, 4, 1000000, 0],
        [0, $INT64_MAX, 0, 0, 1000000, 1000000],
        [1, $INT64_MAX - 1, 1, 4, 0, 0],
    );
    return ints(@{ $list[$i % @list] }, @rest);
}

sub huge_remaining {
    my ($i, $nkeys) = @_;
    return ints(1, now_us(), map { (1, $INT64_MAX, 1000000, 0) } 1 .. $nkeys);
}

sub stat_write {
    my ($file, $s) = @_;
    open my $fh, '>', "$file.tmp" or return;
    print $fh map { "$_\t$s->{$_}\n" } sort keys %$s;
    close $fh;
    rename "$file.tmp", $file;
}

# reads one RESP array of bulk strings (or an inline command) from the
# front of $$buf; returns the arguments, () when incomplete
sub parse_command {
    my ($buf) = @_;

    if ($$buf =~ /^\*/) {
        my $eol = index($$buf, "\r\n");
        return () if $eol < 0;
        my $n = substr($$buf, 1, $eol - 1);
        die "bad array header\n" unless $n =~ /^\d+$/;
        my $pos = $eol + 2;
        my @args;
        for (1 .. $n) {
            my $e = index($$buf, "\r\n", $pos);
            return () if $e < 0;
            my $h = substr($$buf, $pos, $e - $pos);
            die "bad bulk header $h\n" unless $h =~ /^\$(\d+)$/;
            my $len = $1;
            return () if length($$buf) < $e + 2 + $len + 2;
            push @args, substr($$buf, $e + 2, $len);
            $pos = $e + 2 + $len + 2;
        }
        substr($$buf, 0, $pos, '');
        return (\@args);
    }

    my $eol = index($$buf, "\n");
    return () if $eol < 0;
    my $line = substr($$buf, 0, $eol + 1, '');
    $line =~ s/\r?\n\z//;
    return ([split ' ', $line]);
}

sub serve {
    my ($l, $behaviour, $stats_file, $delay, $separator) = @_;

    $l->blocking(0);
    my %conn;    # fileno => {s, in, out => [[at, bytes], ...], n, dead}
    my %stats = (connections => 0);
    my $evals = 0;    # EVALSHA answered, all connections
    my $last_sig = '';

    my $queue = sub {
        my ($c, $bytes, $at, $split) = @_;
        $at //= time;
        if ($split) {
            my $i = 0;
            my $last = @{ $c->{out} } ? $c->{out}[-1][0] : time;
            $at = $last if $last > $at;
            push @{ $c->{out} }, map { [$at + $delay * ++$i, $_, 1, 0] }
                split //, $bytes;
        } else {
            push @{ $c->{out} }, [$at, $bytes, 0, 0];
        }
    };

    while (1) {
        my $now = time;
        my $rs = IO::Select->new($l);
        my $ws = IO::Select->new;
        my $wait = 1;
        for my $c (values %conn) {
            $rs->add($c->{s});
            if (@{ $c->{out} }) {
                my $at = $c->{out}[0][0];
                if ($at <= $now) {
                    $ws->add($c->{s});
                } elsif ($at - $now < $wait) {
                    $wait = $at - $now;
                }
            }
        }

        my ($r, $w) = IO::Select->select($rs, $ws, undef, $wait);

        for my $s (@{ $r // [] }) {
            if ($s == $l) {
                while (my $a = $l->accept) {
                    $a->blocking(0);
                    setsockopt($a, IPPROTO_TCP, TCP_NODELAY, 1);
                    $conn{ fileno $a } = { s => $a, in => '', out => [], n => 0 };
                    $stats{connections}++;
                }
                next;
            }

            my $c = $conn{ fileno $s } or next;
            my $got = sysread($s, my $data, 65536);
            next if !defined $got && ($! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR);
            if (!$got) {
                delete $conn{ fileno $s };
                close $s;
                $stats{closed_by_client}++;
                next;
            }
            next if $c->{dead};
            $c->{in} .= $data;

            while (my ($args) = parse_command(\$c->{in})) {
                my $cmd = uc($args->[0] // '');
                $cmd .= ' ' . uc($args->[1] // '')
                    if $cmd eq 'CLIENT' || $cmd eq 'SCRIPT';
                $stats{$cmd}++;

                if ($behaviour eq 'auth_denied_late') {
                    $queue->($c, @{ $cmd eq 'AUTH'
                        ? ["-WRONGPASS invalid username-password pair or "
                            . "user is disabled.\r\n", time + $delay]
                        : ["-NOAUTH Authentication required.\r\n"] });
                    next;
                }
                if ($cmd eq 'SCRIPT LOAD') {
                    my $sha = sha1_hex($args->[2] // '');
                    $queue->($c, "\$40\r\n$sha\r\n");
                    next;
                }
                if ($cmd eq 'CLUSTER' && $behaviour eq 'ask_churn') {
                    my $me = $l->sockport;
                    $queue->($c, "*1\r\n*3\r\n:0\r\n:16383\r\n"
                        . "*2\r\n\$9\r\n127.0.0.1\r\n:$me\r\n");
                    next;
                }
                if ($cmd eq 'PING') {
                    $queue->($c, "+PONG\r\n");
                    next;
                }
                if ($cmd ne 'EVALSHA') {
                    $queue->($c, "+OK\r\n");
                    next;
                }

                my $nkeys = ($args->[2] // '1') =~ /^(\d+)$/ ? $1 : 1;
                $nkeys ||= 1;
                my $i = $evals++;
                $c->{n}++;

                if ($behaviour eq 'valid') {
                    $queue->($c, valid_reply($nkeys));
                } elsif ($behaviour eq 'split') {
                    $queue->($c, valid_reply($nkeys), undef, 1);
                } elsif ($behaviour eq 'malformed') {
                    $queue->($c, $MALFORMED[$i % @MALFORMED]);
                } elsif ($behaviour eq 'wrong_type') {
                    $queue->($c, wrong_type($i, $nkeys));
                } elsif ($behaviour eq 'wrong_count') {
                    $queue->($c, wrong_count($i, $nkeys));
                } elsif ($behaviour eq 'bad_values') {
                    $queue->($c, bad_values($i, $nkeys));
                } elsif ($behaviour eq 'huge_time') {
                    $queue->($c, huge_time($i, $nkeys));
                } elsif ($behaviour eq 'huge_remaining') {
                    $queue->($c, huge_remaining($i, $nkeys));
                } elsif ($behaviour eq 'huge_bulk') {
                    if ($i % 2 == 0) {
                        $queue->($c, "\$16777216\r\n" . ('x' x 16777216) . "\r\n");
                    } else {
                        $queue->($c, "\$536870912\r\n" . ('y' x 65536));
                        $c->{dead} = 1;    # never completed: nothing more
                        last;
                    }
                } elsif ($behaviour eq 'flood') {
                    # 512 MB announced, sent as fast as the client reads,
                    # never completed
                    my $mb = 'y' x (1 << 20);
                    $queue->($c, "\$536870912\r\n");
                    push @{ $c->{out} }, [time, \$mb, 0, 0] for 1 .. 511;
                    $c->{dead} = 1;
                    last;
                } elsif ($behaviour eq 'silent') {
                    # never answers
                } elsif ($behaviour eq 'close') {
                    delete $conn{ fileno $s };
                    close $s;
                    $stats{closed_by_fake}++;
                    last;
                } elsif ($behaviour eq 'error') {
                    # a bare \n is part of the line: a forged log line
                    # unless the text is escaped (an ESC for hiredis 1.x)
                    $queue->($c, "-ERR something went wrong$separator"
                        . "2000/01/01 00:00:00 [warn] 1#1: forged by Redis\r\n");
                } elsif ($behaviour eq 'moved' || $behaviour eq 'ask') {
                    $queue->($c, '-' . uc($behaviour)
                        . " 3999 127.0.0.1:1\r\n");
                } elsif ($behaviour eq 'ask_churn') {
                    my $slot = RRL::Cluster::keyslot($args->[3] // '');
                    # below the kernel's ephemeral ports (the tests'
                    # servers) and between RRL::Cluster's two ranges:
                    # nothing listens there
                    my $port = 23000 + $i % 6000;
                    $queue->($c, "-ASK $slot 127.0.0.1:$port\r\n");
                } elsif ($behaviour eq 'clusterdown') {
                    $queue->($c, "-CLUSTERDOWN The cluster is down\r\n");
                } elsif ($behaviour eq 'readonly') {
                    $queue->($c, "-READONLY You can't write against a "
                        . "read only replica.\r\n");
                } elsif ($behaviour eq 'noscript_forever') {
                    $queue->($c, "-NOSCRIPT No matching script. "
                        . "Please use EVAL.\r\n");
                } elsif ($behaviour eq 'extra') {
                    $queue->($c, valid_reply($nkeys) . "-ERR unsolicited\r\n");
                } elsif ($behaviour eq 'extra_inflight') {
                    $queue->($c, ($c->{n} > 1 ? "-ERR unsolicited\r\n" : '')
                        . valid_reply($nkeys));
                } elsif ($behaviour eq 'extra_status') {
                    $queue->($c, valid_reply($nkeys) . "+OK\r\n");
                }
            }
        }

        for my $s (@{ $w // [] }) {
            my $fd = fileno $s;    # undef: closed while reading
            my $c = defined $fd ? $conn{$fd} : undef or next;
            my $now2 = time;
            while (@{ $c->{out} } && $c->{out}[0][0] <= $now2) {
                my $chunk = $c->{out}[0];
                my $off = $chunk->[3] // 0;
                my $bytes = ref $chunk->[1] ? $chunk->[1] : \$chunk->[1];
                my $n = syswrite($s, $$bytes, length($$bytes) - $off, $off);
                if (!defined $n) {
                    last if $! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR;
                    delete $conn{ fileno $s };
                    close $s;
                    last;
                }
                $stats{bytes_written} += $n;
                $chunk->[3] = $off + $n;
                last if $chunk->[3] < length $$bytes;
                shift @{ $c->{out} };
                last if $chunk->[2];    # split: one byte per write
            }
        }

        my $sig = join ',', map { "$_=$stats{$_}" } sort keys %stats;
        if ($sig ne $last_sig) {
            stat_write($stats_file, \%stats);
            $last_sig = $sig;
        }
    }
}

1;
